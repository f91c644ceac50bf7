import CEvent
import Glibc
import SidecarEvent
import SidecarHTTP

/// The sidecar's own endpoints (body buffered, answer now or later) and local answers.
extension ClientConnection {
    // MARK: the sidecar's own endpoints

    /// Buffers the body (at most the endpoint's cap within `limits.max_body_bytes`, else 413;
    /// a declared larger body is refused before any of it is read) under the header deadline,
    /// then hands the request to the authenticator. An endpoint that takes no body reads none:
    /// one sent anyway stays unread and the connection closes after the answer.
    func startLocal(_ endpoint: AuthEndpoint, _ head: HTTPRequestHead) {
        guard let auth = worker.auth else {
            respond(.plain(404))
            return
        }
        if let refusal = auth.signInRateRefusal(
            endpoint, head, peer: peerText, peerTrusted: peerTrusted, apiClient: worker.policy.isAPIClient(head, path: path)) {
            if !requestBodyDone { keepAlive = false }  // the unread body cannot be framed away
            respond(refusal)
            return
        }
        let limit = UInt64(max(0, min(endpoint.bodyLimit, auth.settings.maxBodyBytes)))
        if requestBodyDone || limit == 0 {
            if !requestBodyDone { keepAlive = false }  // the unread body cannot be framed away
            runLocal(endpoint, body: [])
            return
        }
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

    func readLocalBody() {
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
    func runLocal(_ endpoint: AuthEndpoint, body: [UInt8]) {
        guard let auth = worker.auth, let request else { return }
        let call = EndpointRequest(
            head: request, body: body, isAPIClient: worker.policy.isAPIClient(request, path: path),
            requestId: String(decoding: requestId, as: UTF8.self))
        localGeneration &+= 1
        let generation = localGeneration
        let answer = auth.handle(endpoint, call) { [weak self] answer in
            guard let self, self.awaitingLocal, self.localGeneration == generation, self.phase == .exchanging else {
                return
            }
            self.awaitingLocal = false
            self.respond(answer)
        }
        if case .now(let response) = answer {
            respond(response)
            return
        }
        awaitingLocal = true
        arm(.local, worker.options.upstreamTimeoutMs + 1_000)  // a backstop behind Apple's own timeout
        updateClientReading()
    }

    func clearLocal() {
        localEndpoint = nil
        localRelay = nil
        if let localBody {
            evbuffer_free(localBody)
            self.localBody = nil
        }
    }

    // MARK: local answers

    /// A request the sidecar refuses (bad head, too large, timeout): answer and close.
    func refuse(_ code: Int) {
        keepAlive = false
        if phase != .exchanging {
            phase = .exchanging
            startedMs = worker.nowMs
            request = nil
            facts = RequestFacts()
            incomplete = nil
            upstreamFailure = false
            response = nil
            worker.requestIDs.next(into: &requestId)
        }
        respond(.plain(code))
    }

    func respond(_ answer: LocalResponse) {
        status = answer.status
        actedForUser = answer.userID
        worker.lineScratch.reset()
        answer.write(
            keepAlive: keepAlive, headOnly: facts.present && facts.method == .head, requestId: requestId,
            into: &worker.lineScratch)
        promisedKeepAlive = keepAlive
        worker.lineScratch.write(to: stream.output)
        bytesSent = UInt64(answer.bodyCount(requestId: requestId))
        if stream.flush() != 0 {
            close()
            return
        }
        logExchange()
        finishExchange()
    }

    func finishExchange() {
        actedForUser = nil
        clearLocal()
        awaitingLocal = false
        if let head = request.take() { worker.recycle(HeadArrays(of: head)) }
        facts = RequestFacts()
        response = nil
        requestRelay = nil
        responseRelay = nil
        if keepAlive && phase == .exchanging && (!worker.isDraining || !worker.drainIdleGraceOver) {
            phase = .waitingForHead
            deadlineKind = .none  // readHeads arms the idle or header deadline
            readHeads()
        } else {
            beginClosing()
        }
    }
}
