import SidecarApple
import SidecarHTTP
import SidecarStore

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

    /// A call to Apple, with Apple's status when it answered.
    func recordAppleCall<T>(_ name: SpanName, of trace: TraceContext, method: HTTPMethod, startNs: UInt64,
                            _ result: Result<T, AppleError>) {
        var status = 0
        var failed = false
        switch result {
        case .success: status = 200
        case .failure(.rejected(_, _, let code)), .failure(.appleServerError(let code)): status = code
        case .failure(.invalidResponse(let code)):
            status = code
            failed = true
        case .failure(.transport): failed = true
        }
        recordCall(name, of: trace, method: method, startNs: startNs, status: status, failed: failed)
    }

    /// A write to the store (a revocation, a forward queued or dropped): failed when the store could not record it.
    func recordStoreCall(_ name: SpanName, of trace: TraceContext, startNs: UInt64, failed: Bool) {
        recordCall(name, of: trace, method: .other, startNs: startNs, status: 0, failed: failed)
    }

    /// A single-use key spent in the store (a login state, a native nonce, a notification's
    /// `jti`): failed when the store could not answer; a key already spent is the store's answer, not its failure.
    func recordClaim(of trace: TraceContext, startNs: UInt64, _ result: ClaimResult) {
        if case .unavailable = result {
            recordCall(.storeClaim, of: trace, method: .other, startNs: startNs, status: 0, failed: true)
        } else {
            recordCall(.storeClaim, of: trace, method: .other, startNs: startNs, status: 0, failed: false)
        }
    }
}

extension Result {
    /// A store's or Apple's answer was a failure (what a span's `failed` records).
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
