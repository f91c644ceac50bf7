import CEvent
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
    private enum Phase { case waitingForHead, exchanging, tunnel, closing, closed }
    private enum Deadline { case none, idle, header, connect, upstream, linger, local }

    private unowned(unsafe) let worker: Worker  // workers outlive their connections
    private let stream: Stream
    private let peerText: [UInt8]
    private let peerTrusted: Bool
    private var phase = Phase.waitingForHead
    private var deadline: Timer!
    private var deadlineKind = Deadline.none
    /// When the current deadline expires, and when the timer is set to fire (`.max`: not
    /// set). A later deadline leaves an earlier timer alone — it re-arms for the rest when
    /// it fires — so a busy keep-alive connection moving between its idle and upstream
    /// deadlines reschedules no timer per request.
    private var deadlineAtMs: Int64 = 0
    private var timerAtMs = Int64.max
    private var readingHeads = false

    // The current exchange.
    private var request: HTTPRequestHead?
    /// Scalars of `request`, read on every callback without touching the stored head (an
    /// optional-chained read of it copies the head: two retains and two releases).
    private var facts = RequestFacts()
    private var path: [UInt8] = []
    private var requestId: [UInt8] = []
    private var keepAlive = true
    private var startedMs: Int64 = 0
    private var upstreamStartedMs: Int64 = 0
    private var lastProgressMs: Int64 = 0
    private var requestRelay: BodyRelay?
    private var requestBodyDone = true
    private var upstream: UpstreamConnection?
    private var retried = false
    /// A copy of a small request body that arrived whole, so the request can be replayed
    /// when a reused upstream connection resets before reading it.
    private var replayBody: [UInt8]?
    private var sawResponseBytes = false
    /// Set once the upstream's (final or 101) response head arrived: whether the upstream
    /// connection may carry another exchange. Scalars only: keeping the head would keep
    /// (and copy, retain and release) its arrays for the whole exchange.
    private var response: UpstreamResponse?
    private var responseRelay: BodyRelay?
    private var status = 0
    private var bytesSent: UInt64 = 0
    /// The session of the current request and the credentials to strip.
    private var identity = RequestIdentity()

    // A local endpoint: its body being buffered, then the wait for its answer.
    private var localEndpoint: AuthEndpoint?
    private var localRelay: BodyRelay?
    private var localBody: OpaquePointer?
    private var awaitingLocal = false
    /// Bumped per local exchange: a late answer for an earlier one is dropped.
    private var localGeneration: UInt64 = 0

    /// Pipelined bytes buffered beyond this stop reading until the current exchange ends.
    private static let pipelineLimit = 64 * 1024
    private static let lingerMs: Int64 = 2_000
    private static let replayLimit: UInt64 = 64 * 1024

    init(worker: Worker, fd: Int32, peer: SocketAddress) {
        self.worker = worker
        stream = Stream(loop: worker.loop, fd: fd)
        peerText = Array(peer.ipText.utf8)
        peerTrusted = worker.rewriter.isTrusted(peer)
        if peer.family != .unix { Socket.setNoDelay(fd) }
        stream.delegate = self
        deadline = Timer(loop: worker.loop) { [unowned self] in self.deadlineFired() }
        arm(.idle, worker.options.idleTimeoutMs)
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
            _ = evbuffer_drain(stream.input, stream.pendingInput)
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

    private func clientEnded() {
        if phase == .exchanging {
            if status == 0 { status = 499 }
            logExchange()
        }
        close()
    }

    // MARK: heads

    private func readHeads() {
        guard !readingHeads else { return }
        readingHeads = true
        defer { readingHeads = false }
        while phase == .waitingForHead {
            let available = stream.pendingInput
            guard available > 0 else {
                if deadlineKind != .idle { arm(.idle, worker.options.idleTimeoutMs) }
                updateClientReading()
                return
            }
            let window = min(available, worker.headLimits.maxHeadBytes + 4)
            guard let base = evbuffer_pullup(stream.input, window) else { return }
            let parsed: HTTPRequestHead?
            var spare = worker.spareHead()
            do {
                parsed = try HTTPRequestHead.parse(
                    UnsafeRawBufferPointer(start: base, count: window), limits: worker.headLimits, reusing: &spare)
            } catch {
                refuse(error.status)
                return
            }
            guard let head = parsed else {
                worker.recycle(spare)
                // Incomplete: the total deadline runs from the head's first byte, not per read.
                if deadlineKind != .header { arm(.header, worker.options.headerTimeoutMs) }
                return
            }
            _ = evbuffer_drain(stream.input, head.headLength)
            startExchange(head)
        }
    }

    private func startExchange(_ head: HTTPRequestHead) {
        phase = .exchanging
        deadlineKind = .none  // the next arm() reschedules the pending timer (no event_del)
        request = head
        facts = RequestFacts(head)
        startedMs = worker.nowMs
        lastProgressMs = startedMs
        status = 0
        bytesSent = 0
        retried = false
        sawResponseBytes = false
        response = nil
        keepAlive = head.connection.keepAlive && !worker.isDraining
        requestBodyDone = head.framing == .none
        // Everything up to the request written upstream reads the head through one borrowed
        // view (the caller's `head` keeps its arrays alive meanwhile).
        head.withView { view in route(head, view) }
    }

    /// Decides (SPEC §4.3) and answers locally or forwards.
    private func route(_ head: HTTPRequestHead, _ view: HeadView) {
        chooseRequestId(view)
        var normalized: [UInt8] = []
        swap(&normalized, &path)  // reuse the previous request's capacity
        normalized.removeAll(keepingCapacity: true)
        let valid: Bool
        do {
            try PathNormalizer.normalize(view[head.path], into: &normalized)
            valid = true
        } catch {
            valid = false
        }
        path = normalized
        guard valid else {
            refuse(400)
            return
        }

        identity.reset()
        switch worker.policy.decide(head, view, path: path, identity: &identity) {
        case .respond(let answer):
            if !requestBodyDone { keepAlive = false }  // the unread body cannot be framed away
            respond(answer)
            return
        case .endpoint(let endpoint):
            startLocal(endpoint, head)
            return
        case .forward:
            break
        }
        if case .contentLength(let n) = head.framing,
           worker.options.maxUploadBytes > 0, n > worker.options.maxUploadBytes {
            refuse(413)
            return
        }
        replayBody = nil
        if case .contentLength(let n) = head.framing, n <= Self.replayLimit, stream.pendingInput >= Int(n) {
            var copy = [UInt8](repeating: 0, count: Int(n))
            _ = copy.withUnsafeMutableBytes { evbuffer_copyout(stream.input, $0.baseAddress, Int(n)) }
            replayBody = copy
        }
        if !requestBodyDone {
            requestRelay = BodyRelay(
                framing: head.framing, chunkOutput: head.framing == .chunked,
                limit: worker.options.maxUploadBytes)
        }
        connectUpstream(head, view, fresh: false)
    }

    /// The client's X-Request-Id if acceptable, else a new one (written over the previous id).
    private func chooseRequestId(_ view: HeadView) {
        if let given = view.firstValue("x-request-id") {
            let bytes = view[given]
            if RequestIDGenerator.isAcceptable(bytes) {
                requestId.removeAll(keepingCapacity: true)
                requestId.append(contentsOf: bytes)
                return
            }
        }
        worker.requestIDs.next(into: &requestId)
    }

    // MARK: upstream

    private func connectUpstream(_ head: HTTPRequestHead, _ view: HeadView, fresh: Bool) {
        if !fresh, let pooled = worker.pool.take(verify: !isRetryable) {
            attach(pooled)
            sendRequest(head, view)
            return
        }
        switch worker.pool.connect() {
        case .ready(let connection):
            worker.readiness.upstreamSucceeded(atMs: worker.nowMs)
            attach(connection)
            sendRequest(head, view)
        case .connecting(let connection):
            attach(connection)
            arm(.connect, worker.options.upstreamConnectTimeoutMs)
            writeRequest(head, view)
        case .failed:
            worker.metrics.recordUpstreamConnectFailure()
            failUpstream(502)
        }
    }

    private func attach(_ connection: UpstreamConnection) {
        connection.owner = self
        upstream = connection
        upstreamStartedMs = worker.nowMs
    }

    private func sendRequest(_ head: HTTPRequestHead, _ view: HeadView) {
        arm(.upstream, worker.options.upstreamTimeoutMs)
        writeRequest(head, view)
    }

    private func writeRequest(_ head: HTTPRequestHead, _ view: HeadView) {
        guard let upstream else { return }
        guard worker.rewriter.write(
            head, view, normalizedPath: path, peerText: peerText, peerTrusted: peerTrusted,
            requestId: requestId, identity: identity, to: upstream.stream.output)
        else {
            failUpstream(503)
            return
        }
        if retried, requestBodyDone, let replayBody {
            replayBody.withUnsafeBytes { _ = evbuffer_add(upstream.stream.output, $0.baseAddress, $0.count) }
        }
        relayRequestBody()
    }

    private func relayRequestBody() {
        guard let upstream else { return }
        if var relay = requestRelay {
            let progress = relay.relay(from: stream.input, to: upstream.stream.output)
            requestRelay = relay
            switch progress {
            case .needMore:
                break
            case .done:
                requestRelay = nil
                requestBodyDone = true
            case .invalid, .tooLarge:
                requestRelay = nil
                keepAlive = false
                if response == nil {
                    dropUpstream()
                    refuse(progress == .invalid ? 400 : 413)
                } else {
                    abort()
                }
                return
            }
        }
        let error = upstream.stream.flush()
        if error != 0 {
            upstreamFailed(error)
            return
        }
        updateClientReading()
    }

    func upstream(_ upstream: UpstreamConnection, didConnect error: Int32) {
        guard error == 0 else {
            worker.metrics.recordUpstreamConnectFailure()
            upstreamFailed(error)
            return
        }
        worker.readiness.upstreamSucceeded(atMs: worker.nowMs)
        arm(.upstream, worker.options.upstreamTimeoutMs)
        relayRequestBody()  // flushes what queued up while connecting, resumes the client
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        lastProgressMs = worker.nowMs
        if phase == .exchanging, requestRelay != nil {
            relayRequestBody()
        } else {
            updateClientReading()
        }
    }

    func upstream(_ upstream: UpstreamConnection, didRead count: Int, error: Int32) {
        guard count > 0 else {
            upstreamEnded(error)
            return
        }
        sawResponseBytes = true
        switch phase {
        case .tunnel:
            tunnelUpstreamToClient()
        case .exchanging:
            lastProgressMs = worker.nowMs
            readResponse()
        default:
            break
        }
    }

    private func readResponse() {
        // Scalars only: binding the stored head would retain its arrays.
        guard let upstream, facts.present else { return }
        let method = facts.method, clientVersion = facts.version, clientUpgrade = facts.upgrade
        while response == nil {
            let available = upstream.stream.pendingInput
            guard available > 0 else { return }
            let window = min(available, worker.upstreamHeadLimits.maxHeadBytes + 4)
            guard let base = evbuffer_pullup(upstream.stream.input, window) else { return }
            let parsed: HTTPResponseHead?
            var spare = worker.spareHead()
            do {
                parsed = try HTTPResponseHead.parse(
                    UnsafeRawBufferPointer(start: base, count: window), requestMethod: method,
                    limits: worker.upstreamHeadLimits, reusing: &spare)
            } catch {
                failUpstream(502)
                return
            }
            guard let head = parsed else {
                worker.recycle(spare)
                return
            }
            _ = evbuffer_drain(upstream.stream.input, head.headLength)
            defer { worker.recycle(HeadArrays(of: head)) }  // reused once `head` is gone
            if head.isInterim {
                // 100 Continue and friends: pass on to HTTP/1.1 clients, then the real head.
                if clientVersion == .http11 {
                    writeResponseHead(head, chunked: false)
                    if stream.flush() != 0 {
                        clientEnded()
                        return
                    }
                }
                continue
            }
            if head.isSwitchingProtocols {
                guard clientUpgrade, head.connection.upgrade, requestBodyDone else {
                    failUpstream(502)
                    return
                }
                startTunnel(head)
                return
            }
            startResponse(head, clientVersion: clientVersion)
        }
        relayResponseBody()
    }

    private func startResponse(_ head: HTTPResponseHead, clientVersion: HTTPVersion) {
        response = UpstreamResponse(keepAlive: head.connection.keepAlive)
        worker.metrics.recordUpstreamLatency(ms: worker.nowMs - upstreamStartedMs)
        status = head.status
        let chunked: Bool
        switch head.framing {
        case .none, .contentLength:
            chunked = false
        case .chunked, .untilClose:
            chunked = clientVersion == .http11
            if !chunked { keepAlive = false }  // HTTP/1.0 reader: the close delimits the body
        }
        if !head.connection.keepAlive && head.framing == .untilClose && !chunked { keepAlive = false }
        writeResponseHead(head, chunked: chunked)
        responseRelay = BodyRelay(framing: head.framing, chunkOutput: chunked)
    }

    private func writeResponseHead(_ head: HTTPResponseHead, chunked: Bool) {
        guard facts.present else { return }
        let clientVersion = facts.version
        guard ResponseRewriter.write(
            head, chunked: chunked, keepAlive: keepAlive, clientVersion: clientVersion,
            setCookie: head.status >= 200 ? identity.setCookie : nil, to: stream.output)
        else {
            abort()
            return
        }
    }

    private func relayResponseBody() {
        guard let upstream, var relay = responseRelay else { return }
        let progress = relay.relay(from: upstream.stream.input, to: stream.output)
        responseRelay = relay
        bytesSent = relay.transferred
        if stream.flush() != 0 {
            clientEnded()
            return
        }
        switch progress {
        case .done:
            finishResponse()
        case .invalid, .tooLarge:
            abort()
        case .needMore:
            if stream.pendingOutput > Worker.highWatermark { upstream.stream.pauseReading() }
        }
    }

    /// The upstream closed or failed.
    private func upstreamEnded(_ error: Int32) {
        switch phase {
        case .tunnel:
            dropUpstream()
            beginClosing()
        case .exchanging:
            if response == nil {
                // A close before any response byte on a reused connection is the keep-alive
                // race (the upstream dropped the idle connection as our request arrived):
                // treated like a reset, i.e. the request was not read.
                upstreamFailed(error == 0 ? ECONNRESET : error)
            } else if let upstream, var relay = responseRelay {
                // Until-close bodies end here; anything else is truncated.
                _ = relay.relay(from: upstream.stream.input, to: stream.output)
                if relay.finishAtEndOfStream(to: stream.output) {
                    responseRelay = relay
                    bytesSent = relay.transferred
                    _ = stream.flush()
                    finishResponse()
                } else {
                    abort()
                }
            } else {
                abort()
            }
        default:
            dropUpstream()
        }
    }

    /// The upstream failed before a response head: retry once on a fresh connection when
    /// that is safe (a stale pooled connection, an idempotent request without a body),
    /// else 502.
    private func upstreamFailed(_ error: Int32) {
        guard phase == .exchanging else { return }
        if response != nil {
            abort()
            return
        }
        // A reset means the upstream never read the request: safe to replay a body we kept.
        let replayable = isRetryable || (error == ECONNRESET && requestBodyDone && replayBody != nil)
        if let upstream, upstream.isReused, !retried, !sawResponseBytes, replayable {
            retried = true
            dropUpstream()
            if let request { request.withView { connectUpstream(request, $0, fresh: true) } }
            return
        }
        failUpstream(error == ETIMEDOUT ? 504 : 502)
    }

    private var isRetryable: Bool {
        guard facts.present, facts.framing == BodyFraming.none else { return false }
        switch facts.method {
        case .get, .head, .options, .put, .delete: return true
        default: return false
        }
    }

    /// Answers 502/504 for an exchange whose response has not started.
    private func failUpstream(_ code: Int) {
        dropUpstream()
        if !requestBodyDone { keepAlive = false }
        respond(.plain(code))
    }

    private func finishResponse() {
        responseRelay = nil
        logExchange()
        if let upstream {
            self.upstream = nil
            let reusable = response?.keepAlive == true && requestBodyDone
                && upstream.stream.pendingInput == 0
            if reusable { upstream.pool.release(upstream) } else { upstream.pool.discard(upstream) }
        }
        if !requestBodyDone { keepAlive = false }
        finishExchange()
    }

    private func dropUpstream() {
        guard let upstream else { return }
        self.upstream = nil
        upstream.pool.discard(upstream)
    }

    // MARK: tunnel (after 101)

    private func startTunnel(_ head: HTTPResponseHead) {
        response = UpstreamResponse(keepAlive: false)
        status = 101
        writeResponseHead(head, chunked: false)
        logExchange()
        phase = .tunnel
        cancelDeadline()
        requestRelay = nil
        tunnelUpstreamToClient()
        tunnelClientToUpstream()
    }

    private func tunnelClientToUpstream() {
        guard let upstream else { return }
        if stream.pendingInput > 0 { _ = evbuffer_add_buffer(upstream.stream.output, stream.input) }
        if upstream.stream.flush() != 0 {
            close()
            return
        }
        updateClientReading()
    }

    private func tunnelUpstreamToClient() {
        guard let upstream else { return }
        if upstream.stream.pendingInput > 0 { _ = evbuffer_add_buffer(stream.output, upstream.stream.input) }
        if stream.flush() != 0 {
            close()
            return
        }
        if stream.pendingOutput > Worker.highWatermark { upstream.stream.pauseReading() }
    }

    // MARK: the sidecar's own endpoints

    /// Buffers the body (at most `limits.max_body_bytes`, else 413) under the header
    /// deadline, then hands the request to the authenticator.
    private func startLocal(_ endpoint: AuthEndpoint, _ head: HTTPRequestHead) {
        guard let auth = worker.auth else {
            respond(.plain(404))
            return
        }
        if requestBodyDone {
            runLocal(endpoint, body: [])
            return
        }
        let limit = UInt64(max(0, auth.settings.maxBodyBytes))
        if case .contentLength(let n) = head.framing, n > limit {
            refuse(413)
            return
        }
        guard let buffer = evbuffer_new() else {
            refuse(503)
            return
        }
        localEndpoint = endpoint
        localBody = buffer
        localRelay = BodyRelay(framing: head.framing, chunkOutput: false, limit: limit)
        arm(.local, worker.options.headerTimeoutMs)
        readLocalBody()
    }

    private func readLocalBody() {
        guard var relay = localRelay, let buffer = localBody, let endpoint = localEndpoint else { return }
        let progress = relay.relay(from: stream.input, to: buffer)
        localRelay = relay
        switch progress {
        case .needMore:
            updateClientReading()
        case .invalid, .tooLarge:
            clearLocal()
            refuse(progress == .invalid ? 400 : 413)
        case .done:
            requestBodyDone = true
            var body = [UInt8](repeating: 0, count: evbuffer_get_length(buffer))
            _ = body.withUnsafeMutableBytes { evbuffer_remove(buffer, $0.baseAddress, $0.count) }
            clearLocal()
            runLocal(endpoint, body: body)
        }
    }

    /// Runs the endpoint; its answer may come now or later on this loop (the callback waits
    /// for Apple). Meanwhile the `.local` deadline runs and a client that goes away closes
    /// the connection; a late answer then finds `awaitingLocal` false and is dropped.
    private func runLocal(_ endpoint: AuthEndpoint, body: [UInt8]) {
        guard let auth = worker.auth, let request else { return }
        let call = EndpointRequest(
            head: request, body: body, isAPIClient: worker.policy.isAPIClient(request, path: path))
        localGeneration &+= 1
        let generation = localGeneration
        var synchronous = true
        var early: LocalResponse?
        let answer = auth.handle(endpoint, call) { [weak self] answer in
            if synchronous {
                early = answer
                return
            }
            guard let self, self.awaitingLocal, self.localGeneration == generation, self.phase == .exchanging else {
                return
            }
            self.awaitingLocal = false
            self.respond(answer)
        }
        synchronous = false
        if let answer = answer ?? early {
            respond(answer)
            return
        }
        awaitingLocal = true
        arm(.local, worker.options.upstreamTimeoutMs + 1_000)  // a backstop behind Apple's own timeout
        updateClientReading()
    }

    private func clearLocal() {
        localEndpoint = nil
        localRelay = nil
        if let localBody {
            evbuffer_free(localBody)
            self.localBody = nil
        }
    }

    // MARK: local answers

    /// A request the sidecar refuses (bad head, too large, timeout): answer and close.
    private func refuse(_ code: Int) {
        keepAlive = false
        if phase != .exchanging {
            phase = .exchanging
            startedMs = worker.nowMs
            request = nil
            facts = RequestFacts()
            requestId = []
        }
        respond(.plain(code))
    }

    private func respond(_ answer: LocalResponse) {
        status = answer.status
        worker.lineScratch.reset()
        answer.write(
            keepAlive: keepAlive, headOnly: facts.present && facts.method == .head, requestId: requestId,
            into: &worker.lineScratch)
        worker.lineScratch.write(to: stream.output)
        bytesSent = UInt64(answer.body.count)
        if stream.flush() != 0 {
            close()
            return
        }
        logExchange()
        finishExchange()
    }

    private func finishExchange() {
        clearLocal()
        awaitingLocal = false
        if let head = request {
            request = nil
            worker.recycle(HeadArrays(of: head))
        }
        facts = RequestFacts()
        response = nil
        requestRelay = nil
        responseRelay = nil
        if keepAlive && !worker.isDraining && phase == .exchanging {
            phase = .waitingForHead
            deadlineKind = .none  // readHeads arms the idle or header deadline
            readHeads()
        } else {
            beginClosing()
        }
    }

    private func logExchange() {
        worker.metrics.recordRequest(route: response == nil ? .sidecar : .upstream, status: status)
        guard let log = worker.accessLog else { return }
        let method = request.map { $0.bytes($0.methodRange) } ?? []
        log.record(AccessLog.Entry(
            method: method, path: request == nil ? [] : path[...], status: status, bytes: bytesSent,
            durationMs: worker.nowMs - startedMs,
            upstreamMs: upstreamStartedMs >= startedMs && response != nil ? worker.nowMs - upstreamStartedMs : nil,
            requestId: requestId, timestampMs: worker.nowMs))
    }

    // MARK: flow control

    private func updateClientReading() {
        let wantsInput: Bool
        switch phase {
        case .exchanging:
            if requestRelay != nil {
                wantsInput = (upstream?.stream.pendingOutput ?? 0) < Worker.highWatermark
            } else {
                wantsInput = stream.pendingInput < Self.pipelineLimit
            }
        case .tunnel:
            wantsInput = (upstream?.stream.pendingOutput ?? 0) < Worker.highWatermark
        case .waitingForHead, .closing:
            wantsInput = true
        case .closed:
            return
        }
        if wantsInput { stream.resumeReading() } else { stream.pauseReading() }
    }

    // MARK: deadlines

    private func arm(_ kind: Deadline, _ ms: Int64) {
        deadlineKind = kind
        let now = worker.nowMs
        deadlineAtMs = now + ms
        guard timerAtMs > deadlineAtMs || timerAtMs < now else { return }  // fires in time
        deadline.schedule(afterMilliseconds: ms)
        timerAtMs = deadlineAtMs
    }

    private func cancelDeadline() {
        deadlineKind = .none
        deadline.cancel()
        timerAtMs = .max
    }

    private func deadlineFired() {
        timerAtMs = .max
        let now = worker.nowMs
        if deadlineKind != .none, now < deadlineAtMs {  // an early timer left for a later deadline
            deadline.schedule(afterMilliseconds: deadlineAtMs - now)
            timerAtMs = deadlineAtMs
            return
        }
        let kind = deadlineKind
        deadlineKind = .none
        switch kind {
        case .none:
            break
        case .idle, .linger:
            close()
        case .header:
            refuse(408)
        case .local:
            if awaitingLocal {
                awaitingLocal = false
                respond(.plain(504))
            } else {
                clearLocal()
                refuse(408)
            }
        case .connect:
            worker.metrics.recordUpstreamConnectFailure()
            failUpstream(504)
        case .upstream:
            let idleFor = worker.nowMs - lastProgressMs
            let timeout = worker.options.upstreamTimeoutMs
            if idleFor < timeout {
                arm(.upstream, timeout - idleFor)
            } else if phase != .exchanging {
                close()
            } else if response == nil {
                if requestBodyDone { failUpstream(504) } else { failUpstream(408) }
            } else {
                abort()
            }
        }
    }

    // MARK: closing

    /// Graceful shutdown: idle connections close now, busy ones after their exchange.
    func drain() {
        keepAlive = false
        if phase == .waitingForHead && stream.pendingInput == 0 { close() }
    }

    private func beginClosing() {
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
    private func lingerClose() {
        guard phase == .closing else { return }
        _ = shutdown(stream.fd, Int32(SHUT_WR))
        _ = evbuffer_drain(stream.input, stream.pendingInput)
        arm(.linger, Self.lingerMs)
        stream.resumeReading()
    }

    /// The exchange cannot be completed (truncated body, client gone): close everything.
    private func abort() {
        if status == 0 { status = 502 }
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
private struct UpstreamResponse {
    var keepAlive: Bool
}

/// The scalars of a request head the connection consults while the exchange runs.
private struct RequestFacts {
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
        upgrade = head.connection.upgrade
    }
}
