/// A user's last sign-in: when, and on what (`web`, or `native:<bundle id>` for an app).
public struct SignInRecord: Sendable, Equatable {
    /// Unix milliseconds.
    public var atMs: Int64
    public var platform: String

    public init(atMs: Int64, platform: String) {
        self.atMs = atMs
        self.platform = platform
    }

    static let maximumPlatformBytes = 255
    /// How long a sign-in is remembered: a user gone longer is no longer "last seen" news.
    public static let retentionSeconds: Int64 = 400 * 86_400
}

/// The last sign-in of each user a memory or file store keeps, bounded: entries past
/// `SignInRecord.retentionSeconds` are swept, and when the table is full the oldest
/// sign-in makes room.
struct SignInTable {
    static let capacity = 1_000_000

    private(set) var entries: [String: SignInRecord] = [:]

    mutating func record(_ subject: String, _ signIn: SignInRecord, nowMs: Int64) {
        if entries[subject] == nil, entries.count >= Self.capacity {
            sweep(nowMs: nowMs)
            if entries.count >= Self.capacity, let oldest = entries.min(by: { $0.value.atMs < $1.value.atMs })?.key {
                entries[oldest] = nil
            }
        }
        if let previous = entries[subject], previous.atMs > signIn.atMs { return }  // a replayed older one
        entries[subject] = signIn
    }

    mutating func sweep(nowMs: Int64) {
        let cutoff = nowMs - SignInRecord.retentionSeconds * 1000
        entries = entries.filter { $0.value.atMs > cutoff }
    }
}
