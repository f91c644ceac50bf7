import Glibc
import SidecarHTTP

/// One finished span as the request path records it: scalars only (no strings, no arrays),
/// so recording copies about 60 bytes into a queue and the exporter thread, not the
/// request, turns it into JSON.
struct SpanRecord: Equatable {
    var traceIdHigh: UInt64 = 0
    var traceIdLow: UInt64 = 0
    var spanId: UInt64 = 0
    /// 0: a root span (the trace started here and this span began it).
    var parentId: UInt64 = 0
    var startNs: UInt64 = 0
    var endNs: UInt64 = 0
    var name = SpanName.request
    var method = HTTPMethod.other
    /// The HTTP status of the answer (the request's, the upstream's, Apple's); 0: none.
    var status: UInt16 = 0
    /// Failed without an HTTP status to show it (refused connection, time-out, bad answer).
    var failed = false

    init() {}

    /// A span of `trace`: the sidecar's own span when `spanId` is the trace's, otherwise a
    /// child of it.
    init(_ name: SpanName, trace: TraceContext, spanId: UInt64, parentId: UInt64, startNs: UInt64, endNs: UInt64) {
        traceIdHigh = trace.traceIdHigh
        traceIdLow = trace.traceIdLow
        self.spanId = spanId
        self.parentId = parentId
        self.startNs = startNs
        self.endNs = max(startNs, endNs)
        self.name = name
    }

    /// OTLP's status: an error for a failure, a 5xx, or a 4xx the sidecar was the client of.
    var isError: Bool {
        if failed { return true }
        return status >= 500 || (status >= 400 && name.kind == .client)
    }
}

/// What a span stands for, which also fixes its name and kind.
enum SpanName: UInt8, CaseIterable {
    /// The request as the sidecar served it (a server span; its id is the one forwarded upstream).
    case request
    /// The exchange with the upstream for it.
    case upstream
    /// Apple's token endpoint: a sign-in's code exchange.
    case appleToken
    /// Apple's public keys, fetched for a sign-in that met a key it did not know.
    case appleKeys
    /// A single-use key spent in the store (`revocations.store`): a login state, a native
    /// nonce, a notification's `jti`.
    case storeClaim
    /// Apple's revoke endpoint: a refresh token revoked (logout, account deletion).
    case appleRevoke
    /// Apple's token endpoint with a refresh token: a session's revalidation.
    case appleRefresh
    /// A revocation written to the store: a session (logout, revalidation) or every session
    /// of a user (account deletion, Apple's notification).
    case storeRevoke
    /// An event queued in the store for `notifications.forward_to` (account deletion, Apple's
    /// notification).
    case storeEnqueue
    /// A queued event dropped from the store again (Apple's duplicate notification).
    case storeAck

    var kind: SpanKind { self == .request ? .server : .client }
}

/// OTLP's `Span.SpanKind` values.
enum SpanKind: Int {
    case server = 2
    case client = 3
}

/// Wall-clock time for spans, read only for sampled requests.
enum SpanClock {
    static func nowNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
