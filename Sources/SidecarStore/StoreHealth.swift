import Synchronization

/// What `/readyz` and the logs say about a store.
public struct StoreHealth: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Accepting changes.
        case ready
        /// Working, but the last change failed (a full disk, say); the reason says which.
        case degraded(String)
        /// Refusing changes (a failed file, an unreachable Redis): sessions are still
        /// checked against what is known, sign-ins needing a single-use check get 503.
        case unavailable(String)
    }

    /// `memory`, `file` (later `redis`): a metric label.
    public var backend: String
    /// `memory`, `file:/path`.
    public var location: String
    public var state: State
    /// Whether what it holds survives a restart.
    public var durable: Bool

    /// Ready unless unavailable: a degraded store still answers (and may recover).
    public var isReady: Bool {
        if case .unavailable = state { return false }
        return true
    }
}

/// Counters for `/metrics`: read without the store's lock, so a scrape never waits on an
/// fsync in progress.
public struct StoreMetrics: Sendable, Equatable {
    /// fdatasync/fsync calls (appends, compactions, directory syncs).
    public var syncs: UInt64 = 0
    public var syncMicrosecondsTotal: UInt64 = 0
    public var syncMicrosecondsMax: UInt64 = 0
    /// Log records appended since open (not counting compaction rewrites).
    public var recordsAppended: UInt64 = 0
    public var compactions: UInt64 = 0
    /// Current size of the log file.
    public var fileBytes: UInt64 = 0
    /// Changes that failed to reach the disk.
    public var writeFailures: UInt64 = 0
    /// Claims refused or keys forgotten early because their kind's table was full.
    public var claimOverflows: UInt64 = 0
    /// `singleUseKeys` and `claimOverflows` by `ClaimKind` (indexed by its raw value); empty
    /// for a store that does not count them (Redis).
    public var singleUseKeysByKind: [UInt64] = []
    public var claimOverflowsByKind: [UInt64] = []
    public var revokedSessions: UInt64 = 0
    public var revokedSubjects: UInt64 = 0
    public var singleUseKeys: UInt64 = 0
    public var pendingForwards: UInt64 = 0
    public var pendingForwardBytes: UInt64 = 0
    /// A shared (Redis) store: commands answered, failed (error reply, timeout, no
    /// connection), their total round-trip time, revocations received by pub/sub, resyncs.
    public var remoteCommands: UInt64 = 0
    public var remoteCommandFailures: UInt64 = 0
    public var remoteCommandMillisecondsTotal: UInt64 = 0
    public var remoteMessages: UInt64 = 0
    public var remoteResyncs: UInt64 = 0

    public init() {}
}

/// The atomics behind `StoreMetrics`, written by a back-end under its own lock.
final class StoreCounters: Sendable {
    let syncs = Atomic<UInt64>(0)
    let syncMicrosecondsTotal = Atomic<UInt64>(0)
    let syncMicrosecondsMax = Atomic<UInt64>(0)
    let recordsAppended = Atomic<UInt64>(0)
    let compactions = Atomic<UInt64>(0)
    let fileBytes = Atomic<UInt64>(0)
    let writeFailures = Atomic<UInt64>(0)
    let claimOverflows = Atomic<UInt64>(0)
    let singleUseKeys = Atomic<UInt64>(0)
    /// Per kind: keys, overflows. A lock of its own, held for a copy of eight numbers.
    let byKind = Mutex<(keys: [UInt64], overflows: [UInt64])>(
        (Array(repeating: 0, count: ClaimKind.allCases.count), Array(repeating: 0, count: ClaimKind.allCases.count)))
    let pendingForwards = Atomic<UInt64>(0)
    let pendingForwardBytes = Atomic<UInt64>(0)

    func recordSync(microseconds: UInt64) {
        syncs.add(1, ordering: .relaxed)
        syncMicrosecondsTotal.add(microseconds, ordering: .relaxed)
        syncMicrosecondsMax.max(microseconds, ordering: .relaxed)
    }

    /// The table sizes after a change.
    func recordSizes(claims: SingleUseKeySets, forwards: ForwardQueue) {
        var keys: UInt64 = 0, overflows: UInt64 = 0
        byKind.withLock { counts in
            for (index, table) in claims.tables.enumerated() {
                counts.keys[index] = UInt64(table.count)
                counts.overflows[index] = table.overflows
                keys += UInt64(table.count)
                overflows &+= table.overflows
            }
        }
        singleUseKeys.store(keys, ordering: .relaxed)
        claimOverflows.store(overflows, ordering: .relaxed)
        pendingForwards.store(UInt64(forwards.count), ordering: .relaxed)
        pendingForwardBytes.store(UInt64(forwards.payloadBytes), ordering: .relaxed)
    }

    func snapshot(revocations: RevocationSet) -> StoreMetrics {
        var metrics = StoreMetrics()
        metrics.syncs = syncs.load(ordering: .relaxed)
        metrics.syncMicrosecondsTotal = syncMicrosecondsTotal.load(ordering: .relaxed)
        metrics.syncMicrosecondsMax = syncMicrosecondsMax.load(ordering: .relaxed)
        metrics.recordsAppended = recordsAppended.load(ordering: .relaxed)
        metrics.compactions = compactions.load(ordering: .relaxed)
        metrics.fileBytes = fileBytes.load(ordering: .relaxed)
        metrics.writeFailures = writeFailures.load(ordering: .relaxed)
        metrics.claimOverflows = claimOverflows.load(ordering: .relaxed)
        (metrics.singleUseKeysByKind, metrics.claimOverflowsByKind) = byKind.withLock { ($0.keys, $0.overflows) }
        let counts = revocations.counts
        metrics.revokedSessions = UInt64(counts.sessions)
        metrics.revokedSubjects = UInt64(counts.subjects)
        metrics.singleUseKeys = singleUseKeys.load(ordering: .relaxed)
        metrics.pendingForwards = pendingForwards.load(ordering: .relaxed)
        metrics.pendingForwardBytes = pendingForwardBytes.load(ordering: .relaxed)
        return metrics
    }
}
