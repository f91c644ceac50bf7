import Synchronization

/// Shared by workers (writers) and the admin loop (reader): when the upstream last accepted
/// a connection. Written once per new upstream connection, not per request.
public final class Readiness: Sendable {
    private let lastUpstreamSuccessMs = Atomic<Int64>(Int64.min)

    public init() {}

    func upstreamSucceeded(atMs now: Int64) { lastUpstreamSuccessMs.store(now, ordering: .relaxed) }

    func upstreamRecentlyReachable(nowMs: Int64, windowMs: Int64) -> Bool {
        let last = lastUpstreamSuccessMs.load(ordering: .relaxed)
        return last != Int64.min && nowMs - last <= windowMs
    }
}
