import Glibc
import Logging
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// One client connection speaking HTTP/2 (h2 by ALPN, or h2c with prior knowledge): frames
/// through an `H2Session`, and each stream served by its own exchange — a `ClientConnection`
/// over a carried `Stream`, begun with the stream's typed request head — so a stream passes
/// through exactly the field rules, normalizer, access decisions, sign-in endpoints, header
/// rewriting, limits, upstream pool and access line that a request read from a socket does.
///
/// The connection keeps what is HTTP/2's own: the session, the streams by id, request-body
/// windows acknowledged as each exchange takes the bytes, responses framed as the client's
/// windows allow, the connection's idle and header deadlines, GOAWAY on drain.
final class HTTP2Connection: StreamDelegate, FrontConnection, NextTurnTask {
    /// Strong, as `ClientConnection.context`: an unretained one is retained around each call.
    let context: ConnectionContext
    let stream: Stream
    let session: H2Session
    let peerText: [UInt8]
    let peerTrusted: Bool
    let openedMs: Int64
    /// The streams' exchanges by stream id (a carried stream's `carrierTag`).
    var exchanges = StreamTable()
    /// Exchanges with request bytes to be told of, in arrival order (after the session call).
    var deliveries: [H2StreamExchange] = []
    /// Exchanges whose output the session took to empty: told once the frames are out.
    var drained: [H2StreamExchange] = []
    /// Where the connection's life and its sending stand (`HTTP2ConnectionStateMachine`).
    var machine: HTTP2ConnectionStateMachine
    /// Exchanges that flushed output since the last pass.
    var outputReady: [H2StreamExchange] = []
    /// Exchanges that answered their stream in full and wait, their carried connections kept
    /// alive, for the next one (at most as many as streams were open at once): a stream then
    /// costs no new exchange, connection, stream buffers and timer.
    var idleExchanges: [H2StreamExchange] = []
    var deadline: ConnectionDeadline
    var lastActiveMs: Int64
    /// When the first of the request heads now being received began (0: none is).
    var headBeganMs: Int64 = 0

    /// Frames queued on the socket beyond this wait until it drains: the bound a client
    /// that does not read holds per connection, whatever its windows say.
    let socketHoldLimit: Int
    /// The settings as the connection was accepted (a reload applies to later connections),
    /// read once: the options are a large value, costly to copy per frame.
    let maxStreams: Int
    /// `limits.upstream_connections_per_client`: the upstream connections its streams hold at
    /// once; a stream beyond it waits for one of them (the caps: `UpstreamAdmission`).
    let upstreamAllowance: UpstreamAllowance

    init(context: ConnectionContext, stream: Stream, peerText: [UInt8], peerTrusted: Bool, openedMs: Int64) {
        self.context = context
        self.stream = stream
        self.peerText = peerText
        self.peerTrusted = peerTrusted
        self.openedMs = openedMs
        lastActiveMs = context.nowMs
        deadline = ConnectionDeadline(loop: context.loop)
        let options = context.settings.options
        socketHoldLimit = max(64 * 1024, options.responseBufferBytes)
        machine = HTTP2ConnectionStateMachine(timeouts: .init(idleMs: options.idleTimeoutMs, headerMs: options.headerTimeoutMs))
        maxStreams = options.maxStreams
        upstreamAllowance = UpstreamAllowance(limit: options.upstreamConnectionsPerClient)
        session = H2Session(
            limits: .init(
                maxStreams: options.maxStreams, maxHeaderBytes: options.maxHeaderBytes,
                maxFields: context.settings.headLimits.maxFields),
            nowMs: context.nowMs)
        session.delegate = self
        stream.delegate = self
        deadline.onFire { [unowned self] in self.deadlineFired() }
        context.metrics.recordHTTP2Connection()
    }

    /// Starts on what the HTTP/1.1 side already read (the preface, and maybe more).
    func start() {
        if context.isDraining { drain() }
        readFrames()
        send()
    }

    // MARK: socket

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        guard count > 0 else {
            close()
            return
        }
        if machine.discardsInput {
            stream.input.drain(stream.pendingInput)
            return
        }
        readFrames()
        send()
    }

    func streamDidDrain(_ stream: Stream) {
        send()
    }

    func stream(_ stream: Stream, didConnect error: Int32) {}

    private func readFrames() {
        guard !machine.isClosed else { return }
        let available = stream.pendingInput
        guard available > 0, let bytes = stream.input.unsafePrefix(available) else { return }
        machine.enterSession()
        let healthy = session.receive(bytes, nowMs: context.nowMs)
        machine.receiveReturned()  // `stream(_:didRead:)` sends next
        stream.input.drain(available)
        if session.headsInProgress == 0 {
            headBeganMs = 0
        } else if headBeganMs == 0 {
            headBeganMs = context.nowMs
        }
        if !healthy, session.refusal == .protocolError { context.metrics.recordHTTP2Refusal(.protocolError) }
        deliver()
        armDeadline()
    }

    /// Tells each exchange of the request bytes the last session call gave it.
    private func deliver() {
        // By index, and emptied keeping its capacity: deliveries queued meanwhile are taken
        // in this pass, and no array is allocated per read.
        var next = 0
        while next < deliveries.count {
            // Lent unretained: the queue holds the exchange until this pass empties it (no
            // other pass does: the session is not read inside one), and the exchange's
            // connection and stream are `let`s of a reference guaranteed for the call, so
            // none of the three is retained and released around it.
            Unmanaged.passUnretained(deliveries[next])._withUnsafeGuaranteedRef { deliverPending(to: $0) }
            next += 1
        }
        deliveries.empty()
    }

    private func deliverPending(to exchange: H2StreamExchange) {
        guard exchange.deliveryPending else { return }
        exchange.deliveryPending = false
        let client = exchange.client
        let carried = client.stream
        guard !carried.isClosed else { return }
        if let request = exchange.takeRequest() { client.beginStream(request) }
        let count = carried.pendingInput
        // A carried stream's delegate is its connection, set once when both are made: called
        // directly, as the stream's existential delegate is retained around a call.
        if count > 0, !carried.isReadPaused { client.stream(carried, didRead: count, error: 0) }
        acknowledge(exchange)
    }

    /// Opens the client's window by the request-body bytes the exchange has taken. Chunk
    /// framing counts as untaken until the input is empty, so this never over-acknowledges.
    func acknowledge(_ exchange: H2StreamExchange) {
        guard exchange.unacknowledged > 0 else { return }
        let left = exchange.client.stream.pendingInput
        let taken = left == 0 ? exchange.unacknowledged : max(0, exchange.unacknowledged - left)
        guard taken > 0 else { return }
        exchange.unacknowledged -= taken
        session.consume(exchange.id, taken)
        scheduleSend()
    }

    /// Writes what the session has to send, within the socket's bound.
    func send() {
        switch machine.sendRequested() {
        case .none, .afterSessionCall: return
        case .sendNow: break
        }
        // Nothing queued (a read that brought no frame to answer yet, a socket that drained):
        // no pass through the session at all.
        var again = session.hasOutput
        while again {
            machine.enterSession()
            let limit = socketHoldLimit
            let healthy = session.send { [stream] frames in
                _ = stream.output.append(frames)
                return stream.pendingOutput < limit
            }
            again = machine.sendReturned()
            if !healthy {
                close()
                return
            }
            var next = 0
            while next < drained.count {
                let exchange = drained[next]
                next += 1
                guard !exchange.exchangeClosed else { continue }
                let client = exchange.client
                client.streamDidDrain(client.stream)  // its stream's delegate (see `deliver`)
            }
            drained.empty()
        }
        if stream.pendingOutput > 0 {
            stream.flushAtEndOfIteration()
        }
        if session.isDone || machine.isFinishing || (machine.isDraining && exchanges.isEmpty && !session.hasOutput) {
            finish()
        }
    }

    /// Sends on the next turn of the loop: an exchange's flush never re-enters the exchange
    /// (a drained stream's `streamDidDrain` would otherwise arrive inside its own flush), and
    /// every stream's output of one turn goes out in one pass.
    func scheduleSend() {
        if machine.sendWanted() { context.loop.nextTurn.run(self) }
    }

    /// The send `scheduleSend` queued (the connection itself is queued: nothing allocated).
    func runOnNextTurn() {
        guard machine.scheduledSendRuns() else { return }
        takeResponses()
        send()
    }

    /// The session is over (GOAWAY sent, nothing left to serve): once the frames are on the
    /// socket, end the sending side and read what the client still sends until it closes,
    /// as HTTP/1.1's lingering close does. Closing over unread bytes would reset the
    /// connection, and a client loses the last frames (the GOAWAY, a response) to a reset.
    private func finish() {
        switch machine.sessionFinished(outputPending: stream.pendingOutput > 0) {
        case .none:
            break
        case .awaitFlush:
            armDeadline()  // `streamDidDrain` comes back here
        case .shutdownAndLinger:
            stream.input.drain(stream.pendingInput)
            stream.shutdownWrite()
            armDeadline()
        }
    }

    // MARK: deadlines

    /// With no stream open, the connection may stay `idle_timeout` (`header_timeout` until its
    /// first request); a request head being received must be complete within `header_timeout`.
    func armDeadline() {
        guard !machine.isClosed else { return }
        let now = context.nowMs
        switch machine.deadline(
            nowMs: now, headBeganMs: headBeganMs, streamsOpen: !exchanges.isEmpty, lastActiveMs: lastActiveMs,
            answered: stream.bytesWritten > 256)
        {
        case .at(let at):
            deadline.start(at: at, now: now)
        case .cancel:
            deadline.suspend()
        }
    }

    private func deadlineFired() {
        guard deadline.firedIfDue(now: context.nowMs) else { return }
        switch machine.deadlineFired(headInProgress: headBeganMs > 0, streamsOpen: !exchanges.isEmpty) {
        case .none:
            break
        case .close:
            close()
        case .goAwayAndTerminate:
            session.goAway()
            session.terminate(0)
            send()
        }
    }

    // MARK: FrontConnection

    var isIdle: Bool { exchanges.isEmpty && headBeganMs == 0 && stream.pendingInput == 0 }
    var isReadingHead: Bool { headBeganMs > 0 }

    func drain() {
        switch machine.drain() {
        case .sendGoAway:
            session.goAway()
            send()
        case .none:
            break
        }
    }

    var upstreamsHeld: Int { upstreamAllowance.held }

    /// The oldest streams holding an upstream connection reset, then GOAWAY (the client opens
    /// a new connection for what comes next): their exchanges end, and their upstream
    /// connections close, on the loop's next turn. Its streams queued for a connection are
    /// reset too, or they would take the descriptors just freed.
    func shed(_ count: Int) -> Int {
        let open = exchanges.all.filter { !$0.exchangeClosed }
        let oldest = open.filter { $0.client.exchange.upstream != nil }.sorted { $0.id < $1.id }.prefix(count)
        for exchange in oldest { session.reset(exchange.id, code: Self.enhanceYourCalm) }
        for exchange in open where exchange.client.upstreamWait != .none {
            exchange.client.leaveUpstreamQueue()
            session.reset(exchange.id, code: Self.enhanceYourCalm)
        }
        drain()  // after the resets: a client may take no frame of a stream after GOAWAY
        send()  // already draining: `drain` sends nothing
        return oldest.count
    }

    static let enhanceYourCalm: UInt32 = 0xb

    func closeIfIdle() {
        if exchanges.isEmpty { close() }
    }

    func close() {
        guard machine.closed() else { return }
        deadline.cancel()
        let open = exchanges.all
        exchanges.removeAll()
        for exchange in open where !exchange.exchangeClosed {
            exchange.streamClosed = true
            exchange.client.clientEnded()
        }
        let idle = idleExchanges
        idleExchanges = []
        for exchange in idle { exchange.client.close() }
        if stream.pendingOutput > 0 { _ = stream.flush() }
        stream.close()
        context.registry.connectionClosed(self)
    }
}
