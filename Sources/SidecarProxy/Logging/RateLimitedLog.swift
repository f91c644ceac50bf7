/// At most one log line per interval for a recurring condition (a dead upstream fails every
/// request): the first occurrence is logged at once, later ones only once the interval has
/// passed, with how many were left out in between.
struct RateLimitedLog {
    let intervalMs: Int64
    private var lastLoggedMs: Int64 = .min
    private var suppressed: UInt64 = 0

    init(intervalMs: Int64) { self.intervalMs = intervalMs }

    /// nil: skip this one; otherwise log it, mentioning the returned count of skipped ones.
    mutating func shouldLog(nowMs: Int64) -> UInt64? {
        if lastLoggedMs != .min, nowMs - lastLoggedMs < intervalMs {
            suppressed &+= 1
            return nil
        }
        lastLoggedMs = nowMs
        defer { suppressed = 0 }
        return suppressed
    }
}
