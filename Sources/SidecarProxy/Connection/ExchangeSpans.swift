import SidecarHTTP

/// The exchange's spans: its own (a server span whose id is the one forwarded upstream) and
/// its upstream exchange's (a client span, a child of it). Only a sampled exchange with
/// exporting on records them: two clock reads and one queue push. Stored inline in
/// `Exchange` and reset with it.
struct ExchangeSpans {
    /// When the request's span and its upstream span began (wall clock, ns); 0: not begun.
    private var startNs: UInt64 = 0
    private var upstreamStartNs: UInt64 = 0

    /// The request's span began: it is recorded as the exchange ends.
    var isRecording: Bool { startNs != 0 }

    mutating func start() { startNs = SpanClock.nowNs() }

    /// The exchange reaches for an upstream (its first try: a retry stays in the same span).
    /// Inlined: called for every forwarded request, nearly all of which record no span.
    @inline(__always)
    mutating func upstreamStarting() {
        if startNs != 0, upstreamStartNs == 0 { upstreamStartNs = SpanClock.nowNs() }
    }

    /// The exchange ended: its spans, ended now. `newSpanId` names the upstream span, if any.
    func ended(
        trace: TraceContext, method: HTTPMethod, status: Int, failed: Bool, reachedUpstream: Bool,
        newSpanId: () -> UInt64
    ) -> (request: SpanRecord, upstream: SpanRecord?) {
        let endNs = SpanClock.nowNs()
        var request = SpanRecord(.request, trace: trace, spanId: trace.spanId, parentId: trace.parentSpanId,
                                 startNs: startNs, endNs: endNs)
        request.method = method
        request.status = UInt16(clamping: status)
        request.failed = failed
        guard upstreamStartNs != 0 else { return (request, nil) }
        var upstream = SpanRecord(.upstream, trace: trace, spanId: newSpanId(),
                                  parentId: trace.spanId, startNs: upstreamStartNs, endNs: endNs)
        upstream.method = method
        if reachedUpstream { upstream.status = UInt16(clamping: status) }
        upstream.failed = !reachedUpstream
        return (request, upstream)
    }
}
