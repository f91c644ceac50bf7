import SidecarHTTP

/// The exchange's spans: its own (a server span whose id is the one forwarded upstream) and
/// its upstream exchange's (a client span, a child of it). Only a sampled exchange with
/// exporting on pays for them: two clock reads and one queue push.
extension ClientConnection {
    /// Starts the request's span once its trace is decided. A continued trace's sampled flag
    /// is the client's to set: honoured within `tracing.max_incoming_sampled_per_second`,
    /// cleared beyond it (the upstream then sees 00, and nothing is exported).
    func markSpanStart() {
        if exchange.trace.continued, exchange.trace.isSampled, !context.incomingSampled.admit(nowMs: context.nowMs) {
            exchange.trace.flags &= ~TraceContext.sampled
        }
        if exchange.trace.isSampled, context.settings.exportsSpans { exchange.spanStartNs = SpanClock.nowNs() }
    }

    func recordSpans(reachedUpstream: Bool) {
        let trace = exchange.trace
        let endNs = SpanClock.nowNs()
        let method = exchange.facts.present ? exchange.facts.method : .other
        var request = SpanRecord(.request, trace: trace, spanId: trace.spanId, parentId: trace.parentSpanId,
                                 startNs: exchange.spanStartNs, endNs: endNs)
        request.method = method
        request.status = UInt16(clamping: exchange.status)
        request.failed = exchange.incomplete != nil
        guard exchange.upstreamSpanStartNs != 0 else {
            context.spans.push(request)
            return
        }
        var upstream = SpanRecord(.upstream, trace: trace, spanId: context.traceIDs.pointee.spanId(),
                                  parentId: trace.spanId, startNs: exchange.upstreamSpanStartNs, endNs: endNs)
        upstream.method = method
        if reachedUpstream { upstream.status = UInt16(clamping: exchange.status) }
        upstream.failed = !reachedUpstream
        context.spans.push(request, upstream)
    }
}
