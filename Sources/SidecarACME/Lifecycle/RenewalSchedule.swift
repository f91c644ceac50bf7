/// When to order next, and how long to wait after a failure. Pure, table-tested.
public enum RenewalSchedule {
    /// The longest single sleep: ARI windows are looked at again at least this often
    /// (RFC 9773 §4.3 suggests polling about twice a day; CAs send Retry-After of ~6 h).
    public static let maxSleepSeconds: Int64 = 6 * 3600

    /// Back-off after `failures` failed orders in a row: 10 s doubling to an hour, or the CA's
    /// Retry-After when it is longer (its rate limit is its to set, up to a day).
    public static func backoffSeconds(failures: Int, retryAfter: Int?) -> Int64 {
        let exponent = min(max(failures - 1, 0), 12)
        let doubled = min(Int64(10) << Int64(exponent), 3600)
        guard let retryAfter else { return doubled }
        return max(doubled, Int64(min(retryAfter, 86_400)))
    }

    /// The due time for `summary`: a moment in the CA's ARI window where it gave one, else
    /// two-thirds into the lifetime.
    public static func due(_ summary: CertificateSummary, ariMoment: Int64?) -> Int64 {
        if let ariMoment { return ariMoment }
        return summary.twoThirdsPoint
    }
}
