import Glibc
import SidecarEvent
import SidecarHTTP

/// Reading request heads and deciding what each request gets.
extension ClientConnection {
    // MARK: heads

    func readHeads() {
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
            guard let prefix = stream.input.unsafePrefix(window) else { return }
            let parsed: HTTPRequestHead?
            var spare = worker.spareHead()
            do {
                parsed = try HTTPRequestHead.parse(
                    prefix, limits: worker.headLimits, reusing: &spare)
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
            stream.input.drain(head.headLength)
            startExchange(head)
        }
    }

    func startExchange(_ head: HTTPRequestHead) {
        phase = .exchanging
        deadlineKind = .none  // the next arm() reschedules the pending timer (no event_del)
        request = head
        facts = RequestFacts(head)
        startedMs = worker.nowMs
        lastProgressMs = startedMs
        status = 0
        incomplete = nil
        upstreamFailure = false
        bytesSent = 0
        retried = false
        sawResponseBytes = false
        response = nil
        promisedKeepAlive = false
        keepAlive = head.connection.keepAlive && !worker.isDraining
        requestBodyDone = head.framing == .none
        // Everything up to the request written upstream reads the head through one borrowed
        // view (the caller's `head` keeps its arrays alive meanwhile).
        head.withView { view in route(head, view) }
    }

    /// Decides and answers locally or forwards.
    func route(_ head: HTTPRequestHead, _ view: HeadView) {
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
            _ = copy.withUnsafeMutableBytes { stream.input.copyPrefix(into: $0) }
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
    func chooseRequestId(_ view: HeadView) {
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
}
