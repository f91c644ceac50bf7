/// When to (re)fetch a JWKS, as a pure state machine with the clock passed in.
///
/// An I/O layer drives it: on every tick or verification call `decide(now:)`; if it returns a
/// reason, fetch and report the outcome with `fetched(_:now:)`. When verification meets an
/// unknown `kid`, call `noteUnknownKey(now:)`: it schedules a refetch at most once per
/// `unknownKeyInterval` (the initial fetch does not count). A failed fetch keeps the last good set.
public struct JWKSRefreshPolicy: Sendable {
    public enum FetchReason: String, Sendable {
        case initial, periodic, unknownKey = "unknown_kid", retry
    }

    public let refreshInterval: Int64
    public let unknownKeyInterval: Int64
    public let retryInterval: Int64

    /// The last successfully fetched key set, kept across failed fetches.
    public private(set) var keySet: JWKSet?
    private var fetchInFlight = false
    private var everAttempted = false
    private var nextScheduledFetch: Int64 = .min
    private var unknownKeyFetchPending = false
    private var lastUnknownKeyFetch: Int64?

    /// - Parameters:
    ///   - refreshInterval: periodic refresh (`apple.jwks_refresh`).
    ///   - unknownKeyInterval: minimum spacing of unknown-kid refetches.
    ///   - retryInterval: delay before retrying after a failed fetch.
    public init(refreshInterval: Int64, unknownKeyInterval: Int64 = 60, retryInterval: Int64 = 30) {
        self.refreshInterval = max(1, refreshInterval)
        self.unknownKeyInterval = unknownKeyInterval
        self.retryInterval = max(1, retryInterval)
    }

    /// Whether a fetch should start now, and why. Marks the fetch in flight when it returns non-nil.
    public mutating func decide(now: Int64) -> FetchReason? {
        guard !fetchInFlight else { return nil }
        let reason: FetchReason
        if !everAttempted {
            reason = .initial
        } else if unknownKeyFetchPending {
            reason = .unknownKey
        } else if now >= nextScheduledFetch {
            reason = keySet == nil ? .retry : .periodic
        } else {
            return nil
        }
        everAttempted = true
        unknownKeyFetchPending = false
        fetchInFlight = true
        return reason
    }

    /// Records that a token named a kid absent from the current set. Returns true when this
    /// schedules a refetch (the next `decide` answers `.unknownKey`), false when rate-limited.
    public mutating func noteUnknownKey(now: Int64) -> Bool {
        if let last = lastUnknownKeyFetch, now - last < unknownKeyInterval { return false }
        guard everAttempted else { return false } // the initial fetch is already due
        lastUnknownKeyFetch = now
        unknownKeyFetchPending = true
        return true
    }

    /// Reports the outcome of the fetch started by the last non-nil `decide`.
    public mutating func fetched(_ result: Result<JWKSet, some Error>, now: Int64) {
        fetchInFlight = false
        switch result {
        case .success(let set):
            keySet = set
            nextScheduledFetch = now + refreshInterval
        case .failure:
            nextScheduledFetch = now + retryInterval
        }
    }
}
