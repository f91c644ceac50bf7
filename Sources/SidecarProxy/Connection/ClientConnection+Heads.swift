import Glibc
import Logging
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

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
                perform(machine.inputIdle())
                updateClientReading()
                return
            }
            guard !isHTTP2 else {
                // A stream's head comes typed (`beginStream`): bytes here are the body of a
                // request whose exchange is over, which nothing may read as a head.
                stream.input.drain(available)
                close()
                return
            }
            let window = min(available, context.settings.headLimits.maxHeadBytes + 4)
            guard let prefix = stream.input.unsafePrefix(window) else { return }
            if prefix[0] == UInt8(ascii: "P"), stream.bytesWritten == 0, context.settings.options.http2 {
                switch HTTP2Preface.match(prefix) {
                case .complete:
                    becomeHTTP2()
                    return
                case .partial:
                    perform(machine.headIncomplete())
                    return
                case .no:
                    break
                }
            }
            let parsed: HTTPRequestHead?
            var spare = context.scratch.spareHead()
            do {
                parsed = try HTTPRequestHead.parse(
                    prefix, limits: context.settings.headLimits, reusing: &spare)
            } catch {
                refuse(error.status)
                return
            }
            guard let head = parsed else {
                context.scratch.recycle(spare)
                perform(machine.headIncomplete())
                return
            }
            stream.input.drain(head.headLength)
            startExchange(head)
        }
    }

    /// An HTTP/2 stream's request: the head its codec built, or the refusal a parser would
    /// have answered the same request with.
    func beginStream(_ request: H2RequestHead.Outcome) {
        switch request {
        case .request(let head):
            startExchange(head)
        case .refused(let error):
            refuse(error.status)
        }
    }

    /// Begins an exchange on the blank one the previous exchange left.
    private func startExchange(_ head: HTTPRequestHead) {
        machine.headParsed(keepAlive: head.connection.keepAlive, hasBody: head.framing != .none, draining: context.isDraining)
        exchange.request = head
        exchange.facts = RequestFacts(head)
        exchange.startedMs = context.nowMs
        exchange.lastProgressMs = exchange.startedMs
        // Everything up to the request written upstream reads the head through one borrowed
        // view (the caller's `head` keeps its arrays alive meanwhile).
        head.withView { view in route(head, view) }
    }

    /// Decides and answers locally or forwards.
    private func route(_ head: HTTPRequestHead, _ view: HeadView) {
        chooseRequestId(view)
        chooseTrace(view)
        markSpanStart()
        let refusal: PathNormalizationError?
        do {
            try PathNormalizer.normalize(view[head.path], separators: context.settings.options.encodedSlashes, into: &exchange.path)
            refusal = nil
        } catch {
            refusal = error
        }
        if let refusal {
            logPathRefusal(refusal, head, view)
            refuse(400)
            return
        }

        // One inout access to `exchange` at a time (two overlap: a debug build's exclusivity
        // check traps), so the upstream's index goes through a local.
        var upstreamIndex = exchange.leg.index, site = exchange.site
        let decision = context.settings.policy.decide(
            head, view, path: exchange.path, trace: exchange.trace, identity: &exchange.identity,
            upstream: &upstreamIndex, site: &site)
        exchange.leg.index = upstreamIndex
        exchange.site = site
        switch decision {
        case .respond(let answer):
            machine.answerWithoutReadingBody()
            respond(answer)
            return
        case .refuse(let answer, let rule, let reason):
            logRuleRefusal(rule: rule, reason: reason)
            machine.answerWithoutReadingBody()
            respond(answer)
            return
        case .endpoint(let endpoint):
            startLocal(endpoint, head)
            return
        case .forward(let ruleHeaders):
            exchange.ruleHeaders = ruleHeaders
        }
        if case .contentLength(let n) = head.framing,
           context.settings.options.maxUploadBytes > 0, n > context.settings.options.maxUploadBytes {
            refuse(413)
            return
        }
        if case .contentLength(let n) = head.framing, n <= Self.replayLimit, stream.pendingInput >= Int(n) {
            exchange.leg.keepForReplay(Int(n), from: stream.input)
        }
        if !machine.requestBodyDone {
            let chunked = head.framing == .chunked
            exchange.requestRelay = BodyRelay(
                framing: head.framing, chunkOutput: chunked, limit: context.settings.options.maxUploadBytes, passesTrailers: chunked)
            if chunked { exchange.requestTrailers = BodyRelay.TrailerSection(context.settings.rewriter.trailerForwarding) }
        }
        connectUpstream(head, view, fresh: false, arriving: true)
    }

    /// A path refused before any decision, with why (an operator who sees 400s can tell an
    /// encoded slash from a bad escape), the request id and the path as sent, escaped; at most
    /// one line per interval, since any client can send such paths.
    private func logPathRefusal(_ error: PathNormalizationError, _ head: HTTPRequestHead, _ view: HeadView) {
        let reason: String
        switch error {
        case .invalidEscape: reason = "path_invalid_escape"
        case .notAbsolute: reason = "path_not_absolute"
        case .dotSegmentWithParameters: reason = "path_dot_segment_with_parameters"
        case .segmentEmptyOnceCut: reason = "path_segment_empty_once_cut"
        case .encodedSeparator: reason = "path_encoded_separator"
        }
        context.log.pathRefused {
            var sent: [UInt8] = []
            for c in view[head.path].prefix(256) {
                if c > 0x20 && c < 0x7F { sent.append(c) } else { PercentEncoding.appendEscape(c, to: &sent) }
            }
            return [
                "reason": .string(reason), "path": .string(String(decoding: sent, as: UTF8.self)),
                "request_id": .string(String(decoding: exchange.requestId, as: UTF8.self)),
            ]
        }
    }

    /// A request a rule refused, with the rule (its index in `rules`), why, and the ids that
    /// join the line to the access line.
    private func logRuleRefusal(rule: Int, reason: String) {
        var metadata: Logger.Metadata = [
            "rule": .stringConvertible(rule), "reason": .string(reason),
            "path": .string(String(decoding: exchange.path, as: UTF8.self)),
            "request_id": .string(String(decoding: exchange.requestId, as: UTF8.self)),
            "trace_id": .string(String(unsafeUninitializedCapacity: 32) { [trace = exchange.trace] buffer in
                trace.writeTraceId(to: UnsafeMutableRawPointer(buffer.baseAddress!))
                return 32
            }),
        ]
        if let subject = exchange.identity.session?.subject { metadata["user_id"] = .string(subject) }
        Logger(label: "sidecar").info("request refused by a rule", metadata: metadata)
    }

    /// The client's X-Request-Id if acceptable, else a new one (into the new exchange's
    /// empty id).
    private func chooseRequestId(_ view: HeadView) {
        if let given = view.firstValue("x-request-id") {
            let bytes = view[given]
            if RequestIDGenerator.isAcceptable(bytes) {
                exchange.requestId.append(contentsOf: bytes)
                return
            }
        }
        context.requestIDs.next(into: &exchange.requestId)
    }

    /// Continues the client's `traceparent` when it is valid and its sender trusted
    /// (`tracing.trust_incoming`, or a peer in `trusted_proxies`); otherwise starts a trace.
    private func chooseTrace(_ view: HeadView) {
        if context.settings.trustIncomingTrace || peer.trusted {
            let incoming = view.incomingTrace()
            if let parent = incoming.parent {
                exchange.trace = .continuing(
                    parent, spanId: context.traceIDs.pointee.spanId(), tracestate: incoming.tracestateFits)
                return
            }
        }
        startTrace()
    }

    /// A new trace for the exchange (no usable `traceparent`, or none read: a refused head).
    func startTrace() {
        exchange.trace = context.traceIDs.pointee.startTrace(sampling: context.settings.sampleThreshold)
    }
}
