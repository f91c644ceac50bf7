/// What a single-use key belongs to; keys of different namespaces never collide.
///
/// A struct rather than an enum so a log written by a newer sidecar with one more
/// namespace still replays (the unknown namespace's keys are kept like any other).
public struct ClaimNamespace: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A login `state` whose callback already ran (§4.2): a replayed form_post is refused.
    public static let loginState = ClaimNamespace(rawValue: 1)
    /// A sealed native nonce already used (§4.5).
    public static let nativeNonce = ClaimNamespace(rawValue: 2)
    /// An Apple notification `jti` already handled (§4.7).
    public static let notificationJTI = ClaimNamespace(rawValue: 3)

    public var description: String {
        switch self {
        case .loginState: return "login_state"
        case .nativeNonce: return "native_nonce"
        case .notificationJTI: return "notification_jti"
        default: return "namespace_\(rawValue)"
        }
    }
}

/// The outcome of claiming a single-use key.
public enum ClaimResult: Sendable, Equatable {
    /// First use: the caller goes ahead.
    case claimed
    /// Used before and not yet expired: a replay, refuse it.
    case alreadyUsed
    /// The store cannot tell (Redis unreachable, a failed disk write, a full table): the
    /// caller must refuse too — 503 with this reason — since going ahead could allow a replay.
    case unavailable(String)
}

/// A namespaced single-use key.
struct ClaimKey: Hashable {
    var namespace: ClaimNamespace
    var key: Key128
}

/// The single-use keys of a store with their expiries, in memory (callers hold a lock).
///
/// Memory is bounded by `capacity`. Expired keys are swept away at most once a minute
/// (a pass over everything) or when the table is full and something has expired by then
/// (`earliestExpiry` says whether anything can have). When it is full of unexpired keys —
/// a flood: anyone can obtain login states — the policy decides:
/// - `.forgetSoonestToExpire` (memory store): drops the quarter of the keys closest to
///   their expiry (the least replay window lost) and accepts. Sorting for it costs
///   O(n log n) once per n/4 claims, so a flood never makes each claim a full scan.
/// - `.refuse` (file store): a durable store must not forget an unexpired claim, so the
///   claim is refused (`.unavailable`, 503) until keys expire. Its capacity is therefore
///   much larger; every claim there is an fsynced append, which also slows a flood down.
struct SingleUseKeyTable {
    enum WhenFull { case forgetSoonestToExpire, refuse }

    enum Admission: Equatable { case fresh, alreadyUsed, full }

    static let sweepIntervalSeconds: Int64 = 60

    let capacity: Int
    let whenFull: WhenFull
    private(set) var entries: [ClaimKey: Int64] = [:]
    /// No key expires before this (a lower bound; `.max` when empty).
    private var earliestExpiry: Int64 = .max
    private var nextSweepAt: Int64 = .min
    /// Claims refused or keys forgotten early because the table was full.
    private(set) var overflows: UInt64 = 0

    init(capacity: Int, whenFull: WhenFull) {
        self.capacity = max(4, capacity)
        self.whenFull = whenFull
    }

    var count: Int { entries.count }

    /// Whether `key` may be claimed now; makes room if the policy allows. A `.fresh` answer
    /// guarantees `insert` stays within the capacity.
    mutating func admit(_ key: ClaimKey, now: Int64) -> Admission {
        if let expiry = entries[key] {
            if expiry > now { return .alreadyUsed }
            entries[key] = nil
        }
        if now >= nextSweepAt && now >= earliestExpiry { sweep(now: now) }
        guard entries.count >= capacity else { return .fresh }
        if now >= earliestExpiry { sweep(now: now) }
        guard entries.count >= capacity else { return .fresh }
        overflows &+= 1
        switch whenFull {
        case .refuse:
            return .full
        case .forgetSoonestToExpire:
            forgetSoonestToExpire(count: max(1, capacity / 4))
            return .fresh
        }
    }

    /// Remembers `key` until `expiresAt` (after `admit` said `.fresh`, or at replay).
    mutating func insert(_ key: ClaimKey, expiresAt: Int64) {
        entries[key] = max(expiresAt, entries[key] ?? .min)
        earliestExpiry = min(earliestExpiry, expiresAt)
    }

    /// Drops every expired key.
    mutating func sweep(now: Int64) {
        entries = entries.filter { $0.value > now }
        earliestExpiry = entries.values.min() ?? .max
        nextSweepAt = now + Self.sweepIntervalSeconds
    }

    private mutating func forgetSoonestToExpire(count quota: Int) {
        let countBefore = entries.count
        let threshold = entries.values.sorted()[min(quota, countBefore) - 1]
        // Strictly earlier ones first, then ties at the threshold until the quota is met.
        entries = entries.filter { $0.value >= threshold }
        let removed = countBefore - entries.count
        if removed < quota {
            var ties = quota - removed
            entries = entries.filter { entry in
                guard ties > 0, entry.value == threshold else { return true }
                ties -= 1
                return false
            }
        }
        earliestExpiry = entries.values.min() ?? .max
    }
}
