import SidecarHTTP

/// Where a worker's code outside the connection (the sign-in flows) records a span: the
/// worker's queue and id generator, both used on the worker's own thread only.
struct SpanSink {
    let queue: SpanQueue
    let ids: UnsafeMutablePointer<TraceIDGenerator>

    /// A client span (a call the sidecar made for `trace`'s request) from `startNs` to now,
    /// a child of the sidecar's span; nothing when the trace is not sampled.
    func recordCall(_ name: SpanName, of trace: TraceContext, method: HTTPMethod, startNs: UInt64,
                    status: Int, failed: Bool) {
        guard trace.isSampled, trace.isSet else { return }
        var span = SpanRecord(name, trace: trace, spanId: ids.pointee.spanId(), parentId: trace.spanId,
                              startNs: startNs, endNs: SpanClock.nowNs())
        span.method = method
        span.status = UInt16(clamping: status)
        span.failed = failed
        queue.push(span)
    }
}
