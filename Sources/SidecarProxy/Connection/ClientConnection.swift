import Glibc
import SidecarEvent
import SidecarHTTP

/// One client connection: reads request heads, decides, forwards to a pooled upstream
/// connection and streams both bodies with backpressure; then keep-alive or close.
///
/// Phases: `waitingForHead` (idle or reading a head under the total header deadline) →
/// `exchanging` (request body up, response down; the two may overlap — or, for the
/// sidecar's own endpoints, body buffered then an answer that may come later) → back, or
/// `tunnel` after a 101, or `closing` (flush, half-close, discard input briefly, close).
final class ClientConnection: StreamDelegate, UpstreamOwner {
    enum Phase { case waitingForHead, exchanging, tunnel, closing, closed }
    enum Deadline { case none, idle, header, connect, upstream, linger, local, handshake }

    unowned(unsafe) let worker: Worker  // workers outlive their connections
    let stream: Stream
    let peerText: [UInt8]
    let peerTrusted: Bool
    var phase = Phase.waitingForHead
    var deadline: Timer!
    var deadlineKind = Deadline.none
    /// When the current deadline expires, and when the timer is set to fire (`.max`: not
    /// set). A later deadline leaves an earlier timer alone — it re-arms for the rest when
    /// it fires — so a busy keep-alive connection moving between its idle and upstream
    /// deadlines reschedules no timer per request.
    var deadlineAtMs: Int64 = 0
    var timerAtMs = Int64.max
    var readingHeads = false

    // The current exchange.
    var request: HTTPRequestHead?
    /// Scalars of `request`, read on every callback without touching the stored head (an
    /// optional-chained read of it copies the head: two retains and two releases).
    var facts = RequestFacts()
    var path: [UInt8] = []
    var requestId: [UInt8] = []
    var keepAlive = true
    /// The final response head went out without `Connection: close`: the client may
    /// already be writing its next request on this connection.
    var promisedKeepAlive = false
    var startedMs: Int64 = 0
    var upstreamStartedMs: Int64 = 0
    var lastProgressMs: Int64 = 0
    var requestRelay: BodyRelay?
    var requestBodyDone = true
    var upstream: UpstreamConnection?
    var retried = false
    /// A copy of a small request body that arrived whole, so the request can be replayed
    /// when a reused upstream connection resets before reading it.
    var replayBody: [UInt8]?
    var sawResponseBytes = false
    /// Set once the upstream's (final or 101) response head arrived: whether the upstream
    /// connection may carry another exchange. Scalars only: keeping the head would keep
    /// (and copy, retain and release) its arrays for the whole exchange.
    var response: UpstreamResponse?
    var responseRelay: BodyRelay?
    var status = 0
    var bytesSent: UInt64 = 0
    /// Set when the exchange ended before its response was complete.
    var incomplete: IncompleteReason?
    /// The sidecar answered 502/504 because the upstream failed (counted under the upstream).
    var upstreamFailure = false
    /// The client's `bytesWritten` and the time it last moved, while the upstream is held
    /// back for it (see `holdUpstreamForClient`).
    var clientWriteMark: UInt64 = 0
    var clientWriteProgressMs: Int64 = 0
    /// The session of the current request and the credentials to strip.
    var identity = RequestIdentity()

    // A local endpoint: its body being buffered, then the wait for its answer.
    var localEndpoint: AuthEndpoint?
    var localRelay: BodyRelay?
    var localBody: ByteQueue?
    var awaitingLocal = false
    /// `LocalResponse.userID` of the answer, for its access line.
    var actedForUser: String?
    /// Bumped per local exchange: a late answer for an earlier one is dropped.
    var localGeneration: UInt64 = 0

    /// Pipelined bytes buffered beyond this stop reading until the current exchange ends.
    static let pipelineLimit = 64 * 1024
    static let lingerMs: Int64 = 2_000
    static let replayLimit: UInt64 = 64 * 1024

    /// When the connection was accepted (to free the oldest first at the descriptor limit).
    let openedMs: Int64

    init(worker: Worker, fd: Int32, peer: SocketAddress) {
        self.worker = worker
        openedMs = worker.nowMs
        let tls = worker.options.tls
        stream = Stream(loop: worker.loop, fd: fd, tls: tls)
        peerText = Array(peer.ipText.utf8)
        peerTrusted = worker.rewriter.isTrusted(peer)
        if peer.family != .unix { Socket.setNoDelay(fd) }
        stream.delegate = self
        deadline = Timer(loop: worker.loop) { [unowned self] in self.deadlineFired() }
        // A TLS handshake is part of getting a request head: it has header_timeout from accept.
        if tls != nil {
            arm(.handshake, worker.options.headerTimeoutMs)
        } else {
            arm(.idle, worker.options.idleTimeoutMs)
        }
    }

    // MARK: client socket

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        guard count > 0 else {
            if error == 0 && phase == .exchanging && requestBodyDone {
                // Half-close after a complete request: answer it, then close.
                keepAlive = false
                stream.pauseReading()
                return
            }
            clientEnded()
            return
        }
        switch phase {
        case .waitingForHead:
            readHeads()
        case .exchanging:
            lastProgressMs = worker.nowMs
            if requestRelay != nil {
                relayRequestBody()
            } else if localRelay != nil {
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
            lingerClose()
        case .exchanging:
            lastProgressMs = worker.nowMs
            if let upstream, upstream.stream.isReadPaused {
                upstream.stream.resumeReading()
                if responseRelay != nil { relayResponseBody() }
            }
        case .tunnel:
            upstream?.stream.resumeReading()
        case .waitingForHead, .closed:
            break
        }
    }

    func stream(_ stream: Stream, didConnect error: Int32) {}

    /// After the handshake the connection is idle like a new plain one (a browser's
    /// preconnect waits here); a request's head then has header_timeout from its first byte.
    func streamDidHandshake(_ stream: Stream) {
        if deadlineKind == .handshake { arm(.idle, worker.options.idleTimeoutMs) }
    }

    func clientEnded() {
        if phase == .exchanging {
            if status == 0 { status = 499 } else { incomplete = .clientClosed }
            logExchange()
        }
        close()
    }

    // MARK: closing

    /// Graceful shutdown begins: every later exchange ends with `Connection: close`; an idle
    /// connection stays open for the worker's grace period, so a request already on its way
    /// is answered instead of meeting a reset. The current exchange ends with `close` too
    /// unless its head already promised keep-alive: then the connection counts as idle
    /// after it (the client may be sending its next request as the response ends).
    func drain() {
        if !promisedKeepAlive { keepAlive = false }
    }

    /// Idle, so the first to close at the descriptor limit: waiting for a request with nothing
    /// of one received, read or still in the socket, and either kept alive after an answer or
    /// open for `firstRequestGraceMs` without sending anything. A connection accepted moments
    /// ago usually has its request on the way (a client sends right after its handshake, and
    /// accept can run in between): closing it then would drop a whole request unanswered.
    var isIdle: Bool {
        isQuiet && (stream.bytesWritten > 0 || worker.nowMs - openedMs >= Self.firstRequestGraceMs)
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
        guard phase != .closed else { return }
        phase = .closing
        if stream.pendingOutput == 0 {
            lingerClose()
        } else {
            arm(.linger, worker.options.idleTimeoutMs)
            updateClientReading()
        }
    }

    /// Half-closes after the last response byte and discards input briefly, so the client
    /// reads the response instead of a reset caused by unread request bytes.
    func lingerClose() {
        guard phase == .closing else { return }
        stream.shutdownWrite()
        stream.input.drain(stream.pendingInput)
        arm(.linger, Self.lingerMs)
        stream.resumeReading()
    }

    /// The exchange cannot be completed (truncated body, a stalled side): close everything,
    /// logged with the status the client got, the bytes it got and why it ended short.
    func abort(_ reason: IncompleteReason) {
        if status == 0 { status = 502 }
        incomplete = reason
        logExchange()
        close()
    }

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        awaitingLocal = false
        clearLocal()
        cancelDeadline()
        dropUpstream()
        stream.close()
        worker.connectionClosed(self)
    }
}

/// What the connection keeps of an upstream response head once it was written to the client.
struct UpstreamResponse {
    var keepAlive: Bool
}

/// The scalars of a request head the connection consults while the exchange runs.
struct RequestFacts {
    /// False between exchanges and for a refused head.
    var present = false
    var method = HTTPMethod.get
    var version = HTTPVersion.http11
    var framing = BodyFraming.none
    /// A validated upgrade request.
    var upgrade = false

    init() {}

    init(_ head: HTTPRequestHead) {
        present = true
        method = head.method
        version = head.version
        framing = head.framing
        upgrade = head.connection.upgrade && head.upgradesToWebSocket
    }
}
