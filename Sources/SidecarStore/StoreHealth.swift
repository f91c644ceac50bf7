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
    /// Claims refused (file) or keys forgotten early (memory) because the table was full.
    public var claimOverflows: UInt64 = 0
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
    let pendingForwards = Atomic<UInt64>(0)
    let pendingForwardBytes = Atomic<UInt64>(0)

    func recordSync(microseconds: UInt64) {
        syncs.add(1, ordering: .relaxed)
        syncMicrosecondsTotal.add(microseconds, ordering: .relaxed)
        syncMicrosecondsMax.max(microseconds, ordering: .relaxed)
    }

    /// The table sizes after a change.
    func recordSizes(claims: SingleUseKeyTable, forwards: ForwardQueue) {
        singleUseKeys.store(UInt64(claims.count), ordering: .relaxed)
        claimOverflows.store(claims.overflows, ordering: .relaxed)
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
        let counts = revocations.counts
        metrics.revokedSessions = UInt64(counts.sessions)
        metrics.revokedSubjects = UInt64(counts.subjects)
        metrics.singleUseKeys = singleUseKeys.load(ordering: .relaxed)
        metrics.pendingForwards = pendingForwards.load(ordering: .relaxed)
        metrics.pendingForwardBytes = pendingForwardBytes.load(ordering: .relaxed)
        return metrics
    }
}
