import Synchronization

/// Shared by workers (writers) and the admin loop (reader): when the upstream last accepted
/// a connection, and whether each worker holds Apple's signing keys. Written once per new
/// upstream connection and on each worker's key-state change, never per request.
public final class Readiness: Sendable {
    /// What one worker needs from Apple before it can complete a sign-in.
    enum AppleKeyState: Sendable {
        /// The worker has not reported yet (still starting).
        case unknown
        /// Sign-in is off: no keys needed.
        case notNeeded
        /// Sign-in is on and no key set has been fetched yet.
        case missing
        /// A key set is held (fetched, or kept from an earlier fetch).
        case held
    }

    /// What the upstreams' names resolve to now, for the probes.
    let resolvedNames = ResolvedNames()

    /// [upstream index]: when it last accepted a connection.
    private let lastUpstreamSuccessMs = Mutex([Int64](repeating: Int64.min, count: WorkerMetrics.maxUpstreams))
    private let appleKeys: Mutex<[AppleKeyState]>

    public init(workers: Int) {
        appleKeys = Mutex([AppleKeyState](repeating: .unknown, count: max(1, workers)))
    }

    func upstreamSucceeded(_ upstream: Int = 0, atMs now: Int64) {
        guard upstream < WorkerMetrics.maxUpstreams else { return }
        lastUpstreamSuccessMs.withLock { $0[upstream] = now }
    }

    /// [upstream index]: its last failure that a connect alone would not show (a certificate
    /// refused), and when.
    private let lastUpstreamFailure = Mutex([(ms: Int64, reason: String)?](repeating: nil, count: WorkerMetrics.maxUpstreams))

    func upstreamFailed(_ upstream: Int, reason: String, atMs now: Int64) {
        guard upstream < WorkerMetrics.maxUpstreams else { return }
        lastUpstreamFailure.withLock { $0[upstream] = (now, reason) }
    }

    /// Why the upstream is down, when its last failure is newer than its last success.
    func upstreamFailure(_ upstream: Int) -> String? {
        guard upstream < WorkerMetrics.maxUpstreams, let failure = lastUpstreamFailure.withLock({ $0[upstream] }) else {
            return nil
        }
        return failure.ms >= lastUpstreamSuccessMs.withLock({ $0[upstream] }) ? failure.reason : nil
    }

    /// After a reload that moved an upstream: an index may now name another address, whose
    /// reachability is not yet known.
    func forgetUpstreams() {
        lastUpstreamSuccessMs.withLock { $0 = [Int64](repeating: Int64.min, count: $0.count) }
        lastUpstreamFailure.withLock { $0 = [(ms: Int64, reason: String)?](repeating: nil, count: $0.count) }
    }

    /// A name of upstream `upstream` resolves to other addresses: whether they are reachable
    /// is not known yet.
    func forgetUpstream(_ upstream: Int) {
        guard upstream < WorkerMetrics.maxUpstreams else { return }
        lastUpstreamSuccessMs.withLock { $0[upstream] = Int64.min }
        lastUpstreamFailure.withLock { $0[upstream] = nil }
    }

    func upstreamRecentlyReachable(_ upstream: Int = 0, nowMs: Int64, windowMs: Int64) -> Bool {
        guard upstream < WorkerMetrics.maxUpstreams else { return false }
        let last = lastUpstreamSuccessMs.withLock { $0[upstream] }
        return last != Int64.min && nowMs - last <= windowMs
    }

    func report(_ state: AppleKeyState, worker: Int) {
        appleKeys.withLock { $0[worker] = state }
    }

    /// True when every worker has reported and none is still without the keys it needs.
    var appleKeysReady: Bool {
        appleKeys.withLock { states in states.allSatisfy { $0 == .notNeeded || $0 == .held } }
    }
}
