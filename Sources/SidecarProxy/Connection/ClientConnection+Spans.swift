import SidecarHTTP

/// The exchange's spans (`ExchangeSpans`): begun once its trace is decided, pushed to the
/// exporter's queue as it ends.
extension ClientConnection {
    /// Starts the request's span once its trace is decided. A continued trace's sampled flag
    /// is the client's to set: honoured within `tracing.max_incoming_sampled_per_second`,
    /// cleared beyond it (the upstream then sees 00, and nothing is exported).
    func markSpanStart() {
        if exchange.trace.continued, exchange.trace.isSampled, !context.incomingSampled.admit(nowMs: context.nowMs) {
            exchange.trace.flags &= ~TraceContext.sampled
        }
        if exchange.trace.isSampled, context.settings.exportsSpans { exchange.spans.start() }
    }

    func recordSpans(reachedUpstream: Bool) {
        let spans = exchange.spans.ended(
            trace: exchange.trace, method: exchange.facts.present ? exchange.facts.method : .other,
            status: exchange.status, failed: exchange.incomplete != nil, reachedUpstream: reachedUpstream
        ) { context.traceIDs.pointee.spanId() }
        if let upstream = spans.upstream {
            context.spans.push(spans.request, upstream)
        } else {
            context.spans.push(spans.request)
        }
    }
}
