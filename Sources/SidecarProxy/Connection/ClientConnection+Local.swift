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
        guard let auth = context.auth else {
            respond(.plain(404))
            return
        }
        if let refusal = auth.signInRateRefusal(
            endpoint, head, peer: peer.text, peerTrusted: peer.trusted,
            apiClient: context.settings.policy.isAPIClient(head, path: exchange.path)) {
            machine.answerWithoutReadingBody()
            respond(refusal)
            return
        }
        let limit = UInt64(max(0, min(endpoint.bodyLimit, auth.settings.maxBodyBytes)))
        if machine.requestBodyDone || limit == 0 {
            machine.answerWithoutReadingBody()
            runLocal(endpoint, body: [])
            return
        }
        if case .contentLength(let n) = head.framing, n > limit {
            refuse(413)
            return
        }
        guard localCall.startBuffering(endpoint, framing: head.framing, limit: limit) else {
            refuse(503)
            return
        }
        perform(machine.localBodyStarted())
        readLocalBody()
    }

    func readLocalBody() {
        switch localCall.buffer(from: stream.input) {
        case .needMore:
            updateClientReading()
        case .refused(let status):
            refuse(status)
        case .complete(let endpoint, let body):
            machine.requestBodyComplete()
            runLocal(endpoint, body: body)
        }
    }

    /// Runs the endpoint; its answer may come now or later on this loop (the callback waits
    /// for Apple). Meanwhile the `.local` deadline runs and a client that goes away closes
    /// the connection; a late answer is then dropped.
    private func runLocal(_ endpoint: AuthEndpoint, body: [UInt8]) {
        guard let auth = context.auth, let request = exchange.request else { return }
        var call = EndpointRequest(
            head: request, body: body, isAPIClient: context.settings.policy.isAPIClient(request, path: exchange.path),
            requestId: String(decoding: exchange.requestId, as: UTF8.self),
            traceId: String(unsafeUninitializedCapacity: 32) { [trace = exchange.trace] buffer in
                trace.writeTraceId(to: UnsafeMutableRawPointer(buffer.baseAddress!))
                return 32
            },
            trace: exchange.trace)
        if endpoint == .check {
            call.forwardAuth = request.withView { view in
                ForwardAuthRoute(
                    context.settings.policy.route(forHost: (request.authority ?? request.host).map { view[$0] }),
                    request, view, peerTrusted: peer.trusted,
                    separators: context.settings.options.encodedSlashes)
            }
        }
        let ticket = localCall.ticket
        let answer = auth.handle(endpoint, call) { [weak self] answer in
            guard let self, self.localCall.isCurrent(ticket) else { return }
            switch self.machine.localAnswered() {
            case .respond: self.respond(answer)
            case .drop: break  // late: the exchange already ended (504, the client gone)
            }
        }
        switch answer {
        case .now(let response):
            respond(response)
        case .later:
            perform(machine.localAnswerPending())
            updateClientReading()
        }
    }

    // MARK: local answers

    /// A request the sidecar refuses (bad head, too large, timeout): answer and close.
    func refuse(_ code: Int) {
        switch machine.refused() {
        case .startRefusal:
            exchange.startedMs = context.nowMs
            context.requestIDs.next(into: &exchange.requestId)
            startTrace()
            markSpanStart()
        case .answerInExchange:
            break
        }
        respond(.plain(code))
    }

    func respond(_ answer: LocalResponse) {
        exchange.status = answer.status
        exchange.actedForUser = answer.userID
        let headOnly = exchange.facts.present && exchange.facts.method == .head
        if isHTTP2 {
            http2?.respond(for: self, with: answer, headOnly: headOnly, requestId: exchange.requestId)
            machine.finalHeadWritten()
        } else {
            context.scratch.line.reset()
            answer.write(
                keepAlive: machine.keepAlive, headOnly: headOnly, requestId: exchange.requestId,
                into: &context.scratch.line)
            machine.finalHeadWritten()
            context.scratch.line.write(to: stream.output)
        }
        exchange.bytesSent = UInt64(answer.bodyCount(requestId: exchange.requestId))
        if stream.flush() != 0 {
            close()
            return
        }
        logExchange()
        finishExchange()
    }

    /// The exchange is logged: the next one starts blank, on this connection or none.
    func finishExchange() {
        dropUpstream()
        localCall.exchangeEnded()
        if let head = exchange.reset() { context.scratch.recycle(HeadArrays(of: head)) }
        perform(machine.exchangeFinished(draining: context.isDraining, drainGraceOver: context.drainIdleGraceOver))
    }
}
