import Synchronization

/// The durable store (`revocations.store: file:/path`): an append-only log that
/// survives restarts and crashes, replayed into memory at open.
///
/// Every change is one record appended with `pwrite` and made durable with `fdatasync`
/// before the call returns, so an HTTP answer that depends on it (a logout, a claimed login
/// state, an accepted notification) is never given for a change a crash could undo. The
/// appends of all workers go through one lock, so they are serialized by the disk's sync
/// latency (see `metrics`); they happen on sign-ins, logouts and notifications only, never
/// for a proxied request, whose revocation check reads memory (`RevocationView`).
///
/// The log is compacted — rewritten with only the unexpired entries and pending forwards,
/// then renamed over the old one — when it has grown past twice its live content (and
/// `StoreLimits.compactionMinimumBytes`), and at open after a repair. See `LogFile` for the
/// file format and locking, `LogReplay` for what happens to damaged records.
public final class FileStore: SynchronousStore {
    public let path: String
    public let revocations: RevocationSet
    public let openingNotes: [String]
    public let createdFile: String?
    let counters: StoreCounters
    let limits: StoreLimits
    let clock: StoreClock
    let state: Mutex<State>
    /// The last change's outcome, kept apart from `state` so `health` never waits on a sync.
    let lastOutcome = Mutex<StoreHealth.State>(.ready)

    struct State {
        var log: LogFile
        var tables: StoreTables
        /// The log size at which to check whether compaction pays off.
        var nextCompactionCheck: Int64
        var closed = false
    }

    /// Opens (or creates) the store file at `path` and replays it. Throws for a file that is
    /// not a store file (left untouched), a missing directory, a file another process has
    /// open, or an I/O error — each naming the path. Damaged records never make it throw:
    /// see `openingNotes`.
    public init(path: String, limits: StoreLimits = StoreLimits(), clock: StoreClock = .system) throws(StoreError) {
        self.path = path
        self.limits = limits
        self.clock = clock
        // Locals first: the replay and compaction below run before `self` is complete.
        let revocations = RevocationSet()
        let counters = StoreCounters()
        self.revocations = revocations
        self.counters = counters
        let now = clock.now()
        let opened = try LogFile.open(path: path, counters: counters)
        let created = opened.created ? opened.log.path : nil
        var tables = StoreTables(claimCapacity: limits.fileClaimCapacity, limits: limits)
        var replayed = ReplayedRevocations()
        let replay = LogReplay.replay(opened.contents, from: opened.recordsStart) { record in
            tables.apply(record, revocations: &replayed)
        }
        var notes = opened.notes + replay.notes(path: path)
        if replay.foundCorruption {
            let copyPath = try LogFile.writeCopy(opened.contents, to: "\(opened.log.path).corrupt-\(now)")
            notes.append("store \(path): the damaged file was saved as \(copyPath) before repair")
        }
        if replay.goodEnd < opened.contents.count { try opened.log.truncate(to: Int64(replay.goodEnd)) }

        revocations.replaceAll(sessions: replayed.sessions, subjects: replayed.subjects, now: now)
        revocations.prune(now: now)
        tables.claims.sweep(now: now)
        var state = State(log: opened.log, tables: tables, nextCompactionCheck: limits.compactionMinimumBytes)
        counters.recordSizes(claims: state.tables.claims, forwards: state.tables.forwards)

        // A repaired file is rewritten clean; a bloated one is compacted before use.
        let live = Self.liveByteCount(state.tables, revocations.snapshot(), now: now)
        if replay.foundCorruption || (state.log.size >= limits.compactionMinimumBytes && state.log.size > 2 * live) {
            try Self.compact(&state, revocations: revocations, counters: counters, limits: limits, now: now)
            notes.append("store \(path): compacted at open to \(state.log.size) bytes")
        }
        self.state = Mutex(state)
        openingNotes = notes
        createdFile = created
    }

    deinit { close() }

    public var health: StoreHealth {
        StoreHealth(backend: "file", location: "file:\(path)", state: lastOutcome.withLock { $0 }, durable: true)
    }

    public var metrics: StoreMetrics { counters.snapshot(revocations: revocations) }

    // MARK: changes

    public func revokeSession(id: [UInt8], expiresAt: Int64) throws(StoreError) {
        let key = Key128(id)
        try change { _, persist, now throws(StoreError) in
            guard expiresAt > now else { return }
            try persist(.revokeSession(key, expiresAt: expiresAt))
            revocations.revokeSession(key, until: expiresAt, now: now)
        }
    }

    public func revokeSubject(_ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64) throws(StoreError) {
        try checkSubject(subject)
        let revocation = SubjectRevocation(cutoffMs: issuedAtOrBeforeMs, keepUntil: keepUntil)
        try change { _, persist, now throws(StoreError) in
            guard keepUntil > now else { return }
            try persist(.revokeSubject(subject, revocation))
            revocations.revokeSubject(subject, revocation, now: now)
        }
    }

    public func claim(_ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64) -> ClaimResult {
        let claimKey = ClaimKey(namespace: namespace, key: Key128(key))
        do {
            return try change { state, persist, now throws(StoreError) in
                state.tables.claim(claimKey, expiresAt: expiresAt, now: now, persist: persist)
            }
        } catch {
            return .unavailable("\(error)")
        }
    }

    public func enqueueForward(payload: [UInt8]) throws(StoreError) -> ForwardID {
        try change { state, persist, now throws(StoreError) in
            try state.tables.enqueueForward(payload: payload, now: now, persist: persist)
        }
    }

    public func ackForward(_ id: ForwardID) throws(StoreError) {
        try change { state, persist, _ throws(StoreError) in try state.tables.ackForward(id, persist: persist) }
    }

    public func recordForwardAttempt(_ id: ForwardID) throws(StoreError) {
        try change { state, persist, now throws(StoreError) in
            try state.tables.recordForwardAttempt(id, now: now, persist: persist)
        }
    }

    public func pendingForwards() throws(StoreError) -> [PendingForward] {
        try state.withLock { state throws(StoreError) in
            guard !state.closed else { throw StoreError.closed }
            return state.tables.forwards.pending()
        }
    }

    public func recordSignIn(_ subject: String, _ signIn: SignInRecord) throws(StoreError) {
        try checkSignIn(subject, signIn)
        try change { state, persist, now throws(StoreError) in
            try state.tables.recordSignIn(subject, signIn, nowMs: now * 1000, persist: persist)
        }
    }

    public func lastSignIn(_ subject: String) throws(StoreError) -> SignInRecord? {
        try state.withLock { state throws(StoreError) in
            guard !state.closed else { throw StoreError.closed }
            return state.tables.signIns.entries[subject]
        }
    }

    public func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken) throws(StoreError) {
        try checkKept(subject, token)
        try change { state, persist, now throws(StoreError) in
            try state.tables.keepRefreshToken(subject, token, nowMs: now * 1000, persist: persist)
        }
    }

    public func keptRefreshToken(_ subject: String) throws(StoreError) -> KeptRefreshToken? {
        try state.withLock { state throws(StoreError) in
            guard !state.closed else { throw StoreError.closed }
            return state.tables.refreshTokens.entries[subject]
        }
    }

    public func forgetRefreshToken(_ subject: String) throws(StoreError) {
        try checkSubject(subject)
        try change { state, persist, _ throws(StoreError) in
            try state.tables.forgetRefreshToken(subject, persist: persist)
        }
    }

    /// Closes the file (releasing its lock); later changes fail with `.closed`.
    public func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            state.log.close()
        }
        lastOutcome.withLock { $0 = .unavailable("closed") }
    }

    /// Runs a change under the lock with a `persist` that appends and syncs one record,
    /// then compacts if due and refreshes the metrics.
    private func change<Value>(
        _ body: (inout State, StoreTables.Persist, Int64) throws(StoreError) -> Value
    ) throws(StoreError) -> Value {
        let now = clock.now()
        return try state.withLock { state throws(StoreError) in
            guard !state.closed else { throw StoreError.closed }
            let log = state.log
            let persist: StoreTables.Persist = { record throws(StoreError) in
                do throws(StoreError) {
                    try log.append(record.framed())
                } catch {
                    self.lastOutcome.withLock {
                        $0 = log.failure == nil ? .degraded("\(error)") : .unavailable("\(error)")
                    }
                    throw error
                }
                self.counters.recordsAppended.add(1, ordering: .relaxed)
                self.lastOutcome.withLock { $0 = .ready }
            }
            let value = try body(&state, persist, now)
            compactIfDue(&state, now: now)
            counters.recordSizes(claims: state.tables.claims, forwards: state.tables.forwards)
            return value
        }
    }
}
