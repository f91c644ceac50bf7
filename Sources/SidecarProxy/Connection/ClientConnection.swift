import Glibc
import SidecarEvent
import SidecarHTTP

/// One client connection: reads request heads, decides, forwards to a pooled upstream
/// connection and streams both bodies with backpressure; then keep-alive or close.
///
/// What happens next is `machine`'s decision (`ConnectionStateMachine`); the request in
/// progress is `exchange`. The connection itself keeps the socket and its one deadline timer,
/// and composes the parts that keep the rest, each the only writer of its fields: `peer` and
/// `proxyHeader` (who the client is), `localCall` (the sidecar's own endpoints), and in the
/// exchange its `leg` to the upstream, `clientSend` and `spans`.
final class ClientConnection: StreamDelegate, UpstreamOwner {
    typealias Phase = ConnectionStateMachine.Phase

    /// Strong and `let`: calls through it borrow it from the connection. An `unowned(unsafe)`
    /// reference is retained and released around every call made through it (and its `let`
    /// properties with it): 24 atomic operations per request in the access line alone.
    let context: ConnectionContext
    let stream: Stream
    private(set) var peer: ClientPeer
    private var proxyHeader = ProxyHeaderReader()
    var machine: ConnectionStateMachine
    var exchange = Exchange()
    /// `let`, as `loop` and `metrics`: calls through a `let` of the connection borrow it,
    /// where one through `context.loop` or a `var` retains and releases it around the call.
    let loop: EventLoop
    let metrics: MetricsRecorder
    var deadline: ConnectionDeadline
    /// `readHeads` is on the stack: an exchange it started that ends at once returns to it.
    var readingHeads = false
    /// A request to the sidecar's own endpoints: its body, and whether a late answer is current.
    var localCall = LocalEndpointCall()
    /// The HTTP/2 connection's cap on upstream connections its streams hold at once (nil:
    /// an HTTP/1.1 connection, which holds one at most).
    let upstreamAllowance: UpstreamAllowance?
    /// The HTTP/2 connection whose stream this exchange serves (nil: an HTTP/1.1 client).
    /// Strong, as `worker`; the connection drops its carried exchanges when it closes.
    let http2: HTTP2Connection?
    /// Queued for an upstream connection (`UpstreamBudget.waiters`), and whether for a fresh
    /// one (an HTTP/2 connection that sheds its streams takes its queued ones off).
    var upstreamWait: UpstreamLeg.Wait { exchange.leg.wait }

    var phase: Phase { machine.phase }

    /// Pipelined bytes buffered beyond this stop reading until the current exchange ends.
    static let pipelineLimit = 64 * 1024
    static let replayLimit: UInt64 = 64 * 1024

    /// When the connection was accepted (to free the oldest first at the descriptor limit).
    let openedMs: Int64

    init(context: ConnectionContext, fd: Int32, peer: SocketAddress) {
        self.context = context
        loop = context.loop
        metrics = context.metrics
        deadline = ConnectionDeadline(loop: context.loop)
        openedMs = context.nowMs
        upstreamAllowance = nil
        http2 = nil
        let options = context.settings.options
        let tls = options.tls
        machine = ConnectionStateMachine(
            timeouts: Self.timeouts(options), handshake: tls != nil, proxyHeader: options.proxyProtocol)
        stream = Stream(loop: context.loop, fd: fd, tls: tls, preamble: options.proxyProtocol)
        self.peer = ClientPeer(text: Array(peer.ipText.utf8), trusted: context.settings.rewriter.isTrusted(peer))
        if peer.family != .unix { Socket.setNoDelay(fd) }
        stream.delegate = self
        deadline.onFire { [unowned self] in self.deadlineFired() }
        perform(machine.initialDeadline)
    }

    /// HTTP/2 streams' exchanges: each request arrives as a typed head (`beginStream`) and
    /// its body on a stream `connection` carries; its response head goes to `connection`
    /// typed, its body as plain bytes through the carried stream (`HTTP2Connection`). Kept
    /// alive between them, it serves the connection's streams one after another, as a
    /// keep-alive connection serves requests.
    init(context: ConnectionContext, carriedBy connection: HTTP2Connection, peerText: [UInt8], peerTrusted: Bool) {
        self.context = context
        loop = context.loop
        metrics = context.metrics
        deadline = ConnectionDeadline(loop: context.loop)
        openedMs = context.nowMs
        upstreamAllowance = connection.upstreamAllowance
        http2 = connection
        machine = ConnectionStateMachine(timeouts: Self.timeouts(context.settings.options), handshake: false, proxyHeader: false)
        stream = Stream(loop: context.loop, carrier: connection)
        peer = ClientPeer(text: peerText, trusted: peerTrusted)
        stream.delegate = self
        deadline.onFire { [unowned self] in self.deadlineFired() }
        perform(machine.initialDeadline)
    }

    private static func timeouts(_ options: ProxyOptions) -> ConnectionStateMachine.Timeouts {
        .init(idleMs: options.idleTimeoutMs, headerMs: options.headerTimeoutMs, upstreamMs: options.upstreamTimeoutMs)
    }

    /// The exchange came over HTTP/2 (its stream is carried by an `HTTP2Connection`).
    var isHTTP2: Bool { stream.isCarried }

    // MARK: client socket

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        guard count > 0 else {
            perform(machine.inputEnded(clean: error == 0))
            return
        }
        switch phase {
        case .waitingForHead:
            readHeads()
        case .exchanging:
            exchange.lastProgressMs = context.nowMs
            if exchange.requestRelay != nil {
                relayRequestBody()
            } else if localCall.isBuffering {
                readLocalBody()
            } else {
                updateClientReading()
            }
        case .tunnel:
            tunnelClientToUpstream()
        case .closing:
            stream.input.drain(stream.pendingInput)
        case .closed:
            break
        }
    }

    func streamDidDrain(_ stream: Stream) {
        switch phase {
        case .closing:
            perform(machine.outputDrained())
        case .exchanging:
            exchange.lastProgressMs = context.nowMs
            if let upstream = exchange.upstream, upstream.stream.isReadPaused {
                upstream.stream.resumeReading()
                if exchange.responseRelay != nil { relayResponseBody() }
            }
        case .tunnel:
            exchange.upstream?.stream.resumeReading()
        case .waitingForHead, .closed:
            break
        }
    }

    func stream(_ stream: Stream, didConnect error: Int32) {}

    /// `proxy_protocol`: the header comes before anything else is read (`ProxyHeaderReader`).
    func streamPreambleReadable(_ stream: Stream) {
        switch proxyHeader.read(from: stream) {
        case .waiting:
            break
        case .ended:
            refuseProxyHeader(.closed, "the peer closed the connection")
        case .invalid(let reason):
            refuseProxyHeader(.invalid, reason)
        case .header(let header):
            let rewriter = context.settings.rewriter
            peer.adopt(header.source) { rewriter.isTrusted(address: $0) }
            stream.endPreamble()
            perform(machine.proxyHeaderRead())
        }
    }

    func refuseProxyHeader(_ reason: ProxyHeaderRefusal, _ detail: String) {
        context.log.refusedProxyHeader(reason, peer: String(decoding: peer.text, as: UTF8.self), detail: detail)
        close()
    }

    func streamDidHandshake(_ stream: Stream) {
        if context.settings.options.http2, stream.negotiatedHTTP2 {
            becomeHTTP2()
            return
        }
        perform(machine.handshakeFinished())
    }

    /// The client speaks HTTP/2: an `HTTP2Connection` takes the socket and this connection's
    /// place at the worker, and starts on whatever was already read.
    func becomeHTTP2() {
        perform(machine.closed())
        let successor = HTTP2Connection(
            context: context, stream: stream, peerText: peer.text, peerTrusted: peer.trusted, openedMs: openedMs)
        context.registry.handOver(from: self, to: successor)
        successor.start()
    }

    func clientEnded() {
        if phase == .exchanging {
            if exchange.status == 0 { exchange.status = 499 } else { exchange.incomplete = .clientClosed }
            logExchange()
        }
        close()
    }

    // MARK: closing

    /// Graceful shutdown begins: every later exchange ends with `Connection: close`; an idle
    /// connection stays open for the worker's grace period, so a request already on its way
    /// is answered instead of meeting a reset.
    func drain() {
        machine.drain()
    }

    /// Idle, so the first to close at the descriptor limit: waiting for a request with nothing
    /// of one received, read or still in the socket, and either kept alive after an answer or
    /// open for `firstRequestGraceMs` without sending anything. A connection accepted moments
    /// ago usually has its request on the way (a client sends right after its handshake, and
    /// accept can run in between): closing it then would drop a whole request unanswered.
    var isIdle: Bool {
        isQuiet && (stream.bytesWritten > 0 || context.nowMs - openedMs >= Self.firstRequestGraceMs)
    }
    /// Part of a request head received (read, or still in the socket), the rest still
    /// awaited (a slowloris candidate).
    var isReadingHead: Bool { phase == .waitingForHead && !isQuiet }
    private var isQuiet: Bool {
        phase == .waitingForHead && stream.pendingInput == 0 && !Socket.hasPendingInput(stream.fd)
    }
    /// How long a new connection may stay silent before the descriptor limit counts it idle
    /// (two and a half rounds of the listener's 100 ms back-off).
    static let firstRequestGraceMs: Int64 = 250

    /// The drain's grace period is over: a connection with no request in progress closes.
    /// A request that reached the socket since the loop last read it is still answered
    /// (closing over unread bytes would also reset the connection instead of closing it).
    func closeIfIdle() {
        if isQuiet { close() }
    }

    func beginClosing() {
        perform(machine.closeRequested(outputPending: stream.pendingOutput > 0))
    }

    /// The exchange cannot be completed (truncated body, a stalled side): close everything,
    /// logged with the status the client got, the bytes it got and why it ended short.
    func abort(_ reason: IncompleteReason) {
        if exchange.status == 0 { exchange.status = 502 }
        exchange.incomplete = reason
        logExchange()
        close()
    }

    func close() {
        guard phase != .closed else { return }
        perform(machine.closed())
        localCall.exchangeEnded()
        dropUpstream()
        stream.close()
        if !isHTTP2 { context.registry.connectionClosed(self) }
    }
}
