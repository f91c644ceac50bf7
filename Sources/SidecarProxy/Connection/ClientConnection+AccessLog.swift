import SidecarHTTP

/// The exchange's metrics and its access line.
extension ClientConnection {
    /// Counts the exchange and writes its access line. The line's bytes are borrowed where
    /// they lie — the connection's arrays, the request head, the session — for the one call:
    /// an entry of slices retained and released each of them and copied the head, about 40
    /// atomic reference-count operations a request (callgrind), more than the line's
    /// formatting costs in cycles.
    func logExchange() {
        let reachedUpstream = exchange.response != nil
        let route: WorkerMetrics.Route = reachedUpstream || exchange.upstreamFailure ? .upstream : .sidecar
        let now = context.nowMs
        if exchange.site >= 0 { metrics.recordSiteRequest(exchange.site, status: exchange.status) }
        metrics.recordRequest(route: route, status: exchange.status, http2: isHTTP2)
        metrics.recordRequestDuration(route: route, ms: now - exchange.startedMs)
        if let incomplete = exchange.incomplete { metrics.recordIncomplete(incomplete) }
        if exchange.spans.isRecording { recordSpans(reachedUpstream: reachedUpstream) }
        guard let log = context.accessLog else { return }
        if !exchange.trace.isSet { startTrace() }
        // Moved out and back (no copy, so no retain): a read of the optional stored head copies it.
        let head = exchange.request.take()
        defer { exchange.request = head }
        let site = exchange.site
        let refusal = exchange.identity.refusal
        exchange.requestId.withUnsafeBytes { id in
            peer.text.withUnsafeBytes { peer in
                exchange.path.withUnsafeBytes { normalizedPath in
                    (exchange.upstream?.pool.text ?? context.upstreams.group(exchange.leg.index)?.text ?? []).withUnsafeBytes { upstreamText in
                        var entry = AccessLog.Entry(
                            timestampMs: now, requestId: id, trace: exchange.trace, client: peer,
                            path: head == nil ? AccessLog.none : normalizedPath, status: exchange.status,
                            bytes: exchange.bytesSent,
                            durationMs: now - exchange.startedMs,
                            upstream: reachedUpstream || exchange.upstreamFailure ? upstreamText : nil,
                            upstreamStatus: reachedUpstream ? exchange.status : nil,
                            upstreamMs: exchange.leg.startedMs >= exchange.startedMs && reachedUpstream
                                ? now - exchange.leg.startedMs : nil,
                            incomplete: exchange.incomplete,
                            sessionRefusal: refusal == .accepted ? nil : refusal)
                        entry.http2 = isHTTP2
                        guard let opened = exchange.identity.opened else {
                            guard var user = exchange.actedForUser else {
                                record(&entry, head, site: site, log)
                                return
                            }
                            user.withUTF8 { bytes in
                                entry.userId = UnsafeRawBufferPointer(bytes)
                                record(&entry, head, site: site, log)
                            }
                            return
                        }
                        opened.withSubject { subject in
                            entry.userId = subject
                            entry.userIdIsBare = opened.subjectIsBare
                            record(&entry, head, site: site, log)
                        }
                    }
                }
            }
        }
    }

    /// Adds what the request head says (method, host, query, user agent, the trusted
    /// proxy's client address, the site its host names) and writes the line.
    private func record(_ entry: inout AccessLog.Entry, _ head: HTTPRequestHead?, site: Int, _ log: AccessLog) {
        guard let head else {
            log.record(entry)
            return
        }
        head.withView { view in
            entry.method = view[head.methodRange]
            entry.methodIsToken = true
            if let host = head.host { entry.host = view[host] }
            if let query = head.query { entry.query = view[query] }
            if let agent = view.firstValue("user-agent") { entry.userAgent = view[agent] }
            if peer.trusted, let address = ClientPeer.forwardedClient(in: view) { entry.client = address }
            guard site >= 0, let sites = context.settings.policy.sites else { return log.record(entry) }
            sites.names[site].withUnsafeBytes { name in
                entry.site = name
                log.record(entry)
            }
        }
    }
}
