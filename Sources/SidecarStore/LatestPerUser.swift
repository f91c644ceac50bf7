/// A record a memory or file store keeps one of per user, the latest by `atMs`, for
/// `retentionSeconds` (a user's last sign-in, their kept refresh token).
protocol DatedPerUser: Sendable {
    /// Unix milliseconds: a later record replaces an earlier one, and age sweeps it.
    var atMs: Int64 { get }
    static var retentionSeconds: Int64 { get }
}

/// The latest record of each user, bounded: records past their retention are swept, and when
/// the table is full the oldest makes room. A replayed older record never replaces a newer one.
struct LatestPerUser<Record: DatedPerUser> {
    static var capacity: Int { 1_000_000 }

    private(set) var entries: [String: Record] = [:]

    mutating func keep(_ subject: String, _ record: Record, nowMs: Int64) {
        if entries[subject] == nil, entries.count >= Self.capacity {
            sweep(nowMs: nowMs)
            if entries.count >= Self.capacity, let oldest = entries.min(by: { $0.value.atMs < $1.value.atMs })?.key {
                entries[oldest] = nil
            }
        }
        if let previous = entries[subject], previous.atMs > record.atMs { return }
        entries[subject] = record
    }

    mutating func forget(_ subject: String) { entries[subject] = nil }

    mutating func sweep(nowMs: Int64) {
        let cutoff = nowMs - Record.retentionSeconds * 1000
        entries = entries.filter { $0.value.atMs > cutoff }
    }
}
