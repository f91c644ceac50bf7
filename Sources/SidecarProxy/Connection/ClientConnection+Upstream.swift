import Glibc
import SidecarEvent
import SidecarHTTP

/// Forwarding an exchange to a pooled upstream connection and streaming its response back.
extension ClientConnection {
    // MARK: upstream

    /// `arriving`: the exchange's first try (not a retry, not one leaving the queue);
    /// `avoiding`: the server that just failed it (another is chosen if there is one).
    func connectUpstream(
        _ head: HTTPRequestHead, _ view: HeadView, fresh: Bool, arriving: Bool = false, avoiding: UpstreamPool? = nil
    ) {
        exchange.spans.upstreamStarting()
        guard let group = context.upstreams.group(exchange.leg.index) else {
            failUpstream(502, upstreamFault: true)
            return
        }
        let pool = group.choose(avoiding: avoiding, nowMs: context.nowMs) { upstreamAdmission($0, fresh: fresh) != .wait }
        if arriving, (upstreamAllowance?.waiting ?? 0) > 0 {
            waitForUpstream(pool, fresh: fresh)  // behind its connection's streams already queued
            return
        }
        var admission = upstreamAdmission(pool, fresh: fresh)
        if admission == .reuse {
            if let pooled = pool.take(verify: !isRetryable) {
                attach(pooled)
                sendRequest(head, view)
                return
            }
            admission = upstreamAdmission(pool, fresh: true)  // none of the idle ones was alive
        }
        switch admission {
        case .wait:
            waitForUpstream(pool, fresh: fresh)
            return
        case .openAfterClosingIdle:
            context.upstreams.closeIdle(preferring: pool)
        case .open, .reuse:
            break
        }
        switch pool.connect() {
        case .ready(let connection):
            context.readiness.upstreamSucceeded(exchange.leg.index, atMs: context.nowMs)
            attach(connection)
            sendRequest(head, view)
        case .connecting(let connection):
            attach(connection)
            perform(machine.upstreamConnecting(timeoutMs: pool.connectTimeoutMs))
            writeRequest(head, view)
        case .failed(let code):
            metrics.recordUpstreamConnectFailure(server: pool.metricsSlot)
            context.log.upstreamFailed("connect()", errno: code, upstream: pool)
            pool.serverFailed(nowMs: context.nowMs)
            if group.servers.count > 1, machine.upstreamFailed(
                reused: true, idempotent: isRetryable, reset: true, bodyKept: exchange.leg.replayBody != nil) == .retry
            {
                connectUpstream(head, view, fresh: true, avoiding: pool)  // nothing was sent: another server
                return
            }
            failUpstream(502, upstreamFault: true)
        }
    }

    /// `upstream_timeout` of the exchange's upstream.
    var upstreamTimeoutMs: Int64 { context.upstreams.timeoutMs(exchange.leg.index) }

    func attach(_ connection: UpstreamConnection) {
        exchange.leg.attach(connection, owner: self, allowance: upstreamAllowance)
        exchange.leg.started(atMs: context.nowMs)
    }

    private func sendRequest(_ head: HTTPRequestHead, _ view: HeadView) {
        armUpstreamDeadline()
        writeRequest(head, view)
    }

    private func writeRequest(_ head: HTTPRequestHead, _ view: HeadView) {
        guard let upstream = exchange.upstream else { return }
        guard context.settings.rewriter.write(
            head, view, upstream: exchange.leg.index, ruleHeaders: exchange.ruleHeaders, normalizedPath: exchange.path, peerText: peer.text, peerTrusted: peer.trusted,
            requestId: exchange.requestId, trace: exchange.trace, identity: exchange.identity, to: upstream.stream.output)
        else {
            failUpstream(503)
            return
        }
        if machine.retried, machine.requestBodyDone, let replayBody = exchange.leg.replayBody {
            _ = upstream.stream.output.append(replayBody)
        }
        relayRequestBody()
    }

    func relayRequestBody() {
        guard let upstream = exchange.upstream else { return }
        if var relay = exchange.requestRelay {
            let progress = relay.relay(from: stream.input, to: upstream.stream.output, trailers: exchange.requestTrailers)
            exchange.requestRelay = relay
            switch progress {
            case .needMore:
                break
            case .done:
                exchange.requestRelay = nil
                machine.requestBodyComplete()
            case .invalid, .tooLarge:
                exchange.requestRelay = nil
                machine.mustClose()
                if exchange.response == nil {
                    dropUpstream()
                    refuse(progress == .invalid ? 400 : 413)
                } else {
                    abort(.requestBodyInvalid)
                }
                return
            }
        }
        if exchange.requestRelay == nil {
            // The whole request is queued: written with the other requests of this loop
            // iteration (a failure comes back through upstream(_:didRead:error:) as
            // upstreamEnded, i.e. upstreamFailed; the drain as upstreamDidDrain).
            upstream.stream.flushAtEndOfIteration()
        } else {
            let error = upstream.stream.flush()
            if error != 0 {
                upstreamFailed(error)
                return
            }
        }
        updateClientReading()
    }

    func upstream(_ upstream: UpstreamConnection, didConnect error: Int32) {
        if error != 0, context.reportUpstreamTLSFailure(upstream, upstream: exchange.leg.index) {
            upstream.pool.serverFailed(nowMs: context.nowMs)
            failUpstream(502, upstreamFault: true)
            return
        }
        guard error == 0 else {
            metrics.recordUpstreamConnectFailure(server: upstream.pool.metricsSlot)
            context.log.upstreamFailed("connect()", errno: error, upstream: upstream.pool)
            upstreamFailed(error, connecting: true)
            return
        }
        context.readiness.upstreamSucceeded(exchange.leg.index, atMs: context.nowMs)
        armUpstreamDeadline()
        relayRequestBody()  // flushes what queued up while connecting, resumes the client
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        exchange.lastProgressMs = context.nowMs
        if phase == .exchanging, exchange.requestRelay != nil {
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
        machine.upstreamBytes()
        switch phase {
        case .tunnel:
            tunnelUpstreamToClient()
        case .exchanging:
            exchange.lastProgressMs = context.nowMs
            readResponse()
        default:
            break
        }
    }

    private func readResponse() {
        // Scalars only: binding the stored head would retain its arrays.
        guard let upstream = exchange.upstream, exchange.facts.present else { return }
        let method = exchange.facts.method, clientVersion = exchange.facts.version, clientUpgrade = exchange.facts.upgrade
        while exchange.response == nil {
            let available = upstream.stream.pendingInput
            guard available > 0 else { return }
            let window = min(available, context.upstreamHeadLimits.maxHeadBytes + 4)
            guard let prefix = upstream.stream.input.unsafePrefix(window) else { return }
            let parsed: HTTPResponseHead?
            var spare = context.scratch.spareHead()
            do {
                parsed = try HTTPResponseHead.parse(
                    prefix, requestMethod: method,
                    limits: context.upstreamHeadLimits, reusing: &spare)
            } catch {
                failUpstream(502, upstreamFault: true)
                return
            }
            guard let head = parsed else {
                context.scratch.recycle(spare)
                return
            }
            upstream.stream.input.drain(head.headLength)
            defer { context.scratch.recycle(HeadArrays(of: head)) }  // reused once `head` is gone
            if head.isInterim {
                // 100 Continue and friends: pass on to HTTP/1.1 clients, then the real head.
                if clientVersion == .http11, !isHTTP2 {
                    writeResponseHead(head, chunked: false)
                    if stream.flush() != 0 {
                        clientEnded()
                        return
                    }
                }
                continue
            }
            if head.isSwitchingProtocols {
                // Only to the protocol the client asked for (a WebSocket upgrade is all that
                // passes): after any other switch the connection is closed with the 502, so
                // nothing the client sends next can reach the upstream unchecked.
                guard clientUpgrade, head.connection.upgrade, head.upgradesToWebSocket, machine.requestBodyDone else {
                    machine.mustClose()
                    failUpstream(502, upstreamFault: true)
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
        exchange.response = UpstreamResponse(keepAlive: head.connection.keepAlive)
        metrics.recordUpstreamLatency(server: exchange.leg.metricsSlot, ms: context.nowMs - exchange.leg.startedMs)
        exchange.status = head.status
        if isHTTP2 {
            // HTTP/2 frames the body itself: the relay takes the upstream's framing off.
            // (`http2?.` borrows the reference: binding it would retain and release it.)
            http2?.respond(for: self, with: head, setCookie: exchange.identity.setCookie)
            machine.finalHeadWritten()
            let chunked = head.framing == .chunked
            exchange.responseRelay = BodyRelay(framing: head.framing, chunkOutput: false, passesTrailers: chunked)
            if chunked { exchange.responseTrailers = BodyRelay.TrailerSection(.hopByHopOnly) }
            return
        }
        let chunked: Bool
        switch head.framing {
        case .none, .contentLength:
            chunked = false
        case .chunked, .untilClose:
            chunked = clientVersion == .http11
            if !chunked { machine.mustClose() }  // HTTP/1.0 reader: the close delimits the body
        }
        if !head.connection.keepAlive && head.framing == .untilClose && !chunked { machine.mustClose() }
        writeResponseHead(head, chunked: chunked)
        let passesTrailers = chunked && head.framing == .chunked
        exchange.responseRelay = BodyRelay(framing: head.framing, chunkOutput: chunked, passesTrailers: passesTrailers)
        if passesTrailers { exchange.responseTrailers = BodyRelay.TrailerSection(.hopByHopOnly) }
    }

    func writeResponseHead(_ head: HTTPResponseHead, chunked: Bool) {
        guard exchange.facts.present else { return }
        let clientVersion = exchange.facts.version
        guard ResponseRewriter.write(
            head, chunked: chunked, keepAlive: machine.keepAlive, clientVersion: clientVersion,
            setCookie: head.status >= 200 ? exchange.identity.setCookie : nil, to: stream.output)
        else {
            abort(.upstreamInvalidHead)
            return
        }
        if head.status >= 200 { machine.finalHeadWritten() }
    }

    func relayResponseBody() {
        guard let upstream = exchange.upstream, var relay = exchange.responseRelay else { return }
        let progress = relay.relay(from: upstream.stream.input, to: stream.output, trailers: exchange.responseTrailers)
        exchange.responseRelay = relay
        exchange.bytesSent = relay.transferred
        if progress == .done {
            // The whole response is queued: written with the others of this loop iteration
            // (a failure comes back as a failed read, clientEnded; the drain lets a closing
            // connection linger-close). A body still coming is written now, since holding the
            // upstream for a slow client is decided from what the kernel did not take.
            stream.flushAtEndOfIteration()
        } else if stream.flush() != 0 {
            clientEnded()
            return
        }
        switch progress {
        case .done:
            finishResponse()
        case .invalid, .tooLarge:
            abort(.upstreamInvalidBody)
        case .needMore:
            if stream.pendingOutput > context.settings.holdLimit { holdUpstreamForClient(upstream) }
        }
    }

    /// The upstream closed or failed.
    private func upstreamEnded(_ error: Int32) {
        switch phase {
        case .tunnel:
            dropUpstream()
            beginClosing()
        case .exchanging:
            if exchange.response == nil {
                // A close before any response byte on a reused connection is the keep-alive
                // race (the upstream dropped the idle connection as our request arrived):
                // treated like a reset, i.e. the request was not read.
                upstreamFailed(error == 0 ? ECONNRESET : error)
            } else if let upstream = exchange.upstream, var relay = exchange.responseRelay {
                // Until-close bodies end here; anything else is truncated.
                _ = relay.relay(from: upstream.stream.input, to: stream.output)
                if relay.finishAtEndOfStream(to: stream.output) {
                    exchange.responseRelay = relay
                    exchange.bytesSent = relay.transferred
                    _ = stream.flush()
                    finishResponse()
                } else {
                    abort(.upstreamClosed)
                }
            } else {
                abort(.upstreamClosed)
            }
        default:
            dropUpstream()
        }
    }

    /// The upstream failed before a response head: retry once on a fresh connection when
    /// that is safe (a stale pooled connection, or a connect refused by one of several
    /// servers; an idempotent request without a body, or one kept whole), on another server
    /// if there is one, else 502.
    func upstreamFailed(_ error: Int32, connecting: Bool = false) {
        guard phase == .exchanging else { return }
        if exchange.response != nil {
            abort(.upstreamClosed)
            return
        }
        let failed = exchange.upstream?.pool
        if let upstream = exchange.upstream, context.reportUpstreamTLSFailure(upstream, upstream: exchange.leg.index) {
            failed?.serverFailed(nowMs: context.nowMs)
            failUpstream(502, upstreamFault: true)
            return
        }
        let reused = exchange.upstream?.isReused == true
        // A fresh connection that failed is the server's doing; a reused one, the keep-alive race.
        if !reused { failed?.serverFailed(nowMs: context.nowMs) }
        // With several servers, another can take a request nothing was sent for, or that is safe to repeat.
        let elsewhere = (connecting || isRetryable) && (context.upstreams.group(exchange.leg.index)?.servers.count ?? 1) > 1
        // A reset means the upstream never read the request: safe to replay a body we kept.
        switch machine.upstreamFailed(
            reused: reused || elsewhere, idempotent: isRetryable, reset: error == ECONNRESET || connecting,
            bodyKept: exchange.leg.replayBody != nil)
        {
        case .retry:
            dropUpstream()
            if let request = exchange.request {
                request.withView { connectUpstream(request, $0, fresh: true, avoiding: failed) }
            }
            return
        case .ignore:
            return
        case .fail:
            break
        }
        if exchange.upstream?.stream.isClosed == false || error != 0 {
            context.log.upstreamFailed("exchange", errno: error == 0 ? ECONNRESET : error, upstream: exchange.upstream?.pool)
        }
        failUpstream(error == ETIMEDOUT ? 504 : 502, upstreamFault: true)
    }

    private var isRetryable: Bool {
        guard exchange.facts.present, exchange.facts.framing == BodyFraming.none else { return false }
        switch exchange.facts.method {
        case .get, .head, .options, .put, .delete: return true
        default: return false
        }
    }

    /// Answers 502/504 for an exchange whose response has not started; `upstreamFault`:
    /// the upstream's doing (counted under the upstream in `/metrics`, not the sidecar).
    func failUpstream(_ code: Int, upstreamFault: Bool = false) {
        exchange.upstreamFailure = upstreamFault
        dropUpstream()
        machine.answerWithoutReadingBody()
        guard let request = exchange.request else { return respond(.plain(code)) }
        respond(context.settings.policy.localError(code, request, path: exchange.path))
    }

    private func finishResponse() {
        if isHTTP2 { http2?.responseBodyComplete(for: self, trailers: exchange.responseTrailers?.bytes ?? []) }
        exchange.responseRelay = nil
        logExchange()
        if let upstream = exchange.leg.detach() {
            let reusable = exchange.response?.keepAlive == true && machine.requestBodyDone
                && upstream.stream.pendingInput == 0
            if reusable {
                upstream.pool.release(upstream)  // which also tells the server's health it answered
            } else {
                upstream.pool.serverAnswered()
                upstream.pool.discard(upstream)
            }
        }
        machine.answerWithoutReadingBody()
        finishExchange()
    }

    func dropUpstream() {
        if exchange.leg.wait != .none { leaveUpstreamQueue() }
        guard let upstream = exchange.leg.detach() else { return }
        upstream.pool.discard(upstream)
    }
}
