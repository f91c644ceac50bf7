import Synchronization

/// The default store (`revocations.store: memory`): everything in this process's memory,
/// lost on restart. Workers share one; its lock is held for a dictionary update,
/// never for I/O.
public final class MemoryStore: SynchronousStore {
    public let revocations = RevocationSet()
    private let tables: Mutex<StoreTables>
    private let counters = StoreCounters()
    private let clock: StoreClock
    private let closed = Atomic<Bool>(false)

    public init(limits: StoreLimits = StoreLimits(), clock: StoreClock = .system) {
        self.clock = clock
        tables = Mutex(StoreTables(claimCapacity: limits.memoryClaimCapacity, limits: limits))
    }

    public var health: StoreHealth {
        StoreHealth(backend: "memory", location: "memory",
                    state: closed.load(ordering: .relaxed) ? .unavailable("closed") : .ready, durable: false)
    }

    public var metrics: StoreMetrics { counters.snapshot(revocations: revocations) }

    public var openingNotes: [String] { [] }
    public var createdFile: String? { nil }

    public func revokeSession(id: [UInt8], expiresAt: Int64) throws(StoreError) {
        try checkOpen()
        revocations.revokeSession(Key128(id), until: expiresAt, now: clock.now())
    }

    public func revokeSubject(_ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64) throws(StoreError) {
        try checkOpen()
        try checkSubject(subject)
        revocations.revokeSubject(subject, SubjectRevocation(cutoffMs: issuedAtOrBeforeMs, keepUntil: keepUntil), now: clock.now())
    }

    public func claim(_ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64) -> ClaimResult {
        if closed.load(ordering: .relaxed) { return .unavailable("\(StoreError.closed)") }
        let claimKey = ClaimKey(namespace: namespace, key: Key128(key))
        let now = clock.now()
        return change { $0.claim(claimKey, expiresAt: expiresAt, now: now, persist: { _ in }) }
    }

    public func enqueueForward(payload: [UInt8]) throws(StoreError) -> ForwardID {
        try checkOpen()
        let now = clock.now()
        return try change { tables throws(StoreError) in
            try tables.enqueueForward(payload: payload, now: now, persist: { _ in })
        }
    }

    public func ackForward(_ id: ForwardID) throws(StoreError) {
        try checkOpen()
        try change { tables throws(StoreError) in try tables.ackForward(id, persist: { _ in }) }
    }

    public func recordForwardAttempt(_ id: ForwardID) throws(StoreError) {
        try checkOpen()
        let now = clock.now()
        try change { tables throws(StoreError) in try tables.recordForwardAttempt(id, now: now, persist: { _ in }) }
    }

    public func pendingForwards() throws(StoreError) -> [PendingForward] {
        try checkOpen()
        return tables.withLock { $0.forwards.pending() }
    }

    public func recordSignIn(_ subject: String, _ signIn: SignInRecord) throws(StoreError) {
        try checkOpen()
        try checkSignIn(subject, signIn)
        let nowMs = clock.now() * 1000
        try change { tables throws(StoreError) in try tables.recordSignIn(subject, signIn, nowMs: nowMs, persist: { _ in }) }
    }

    public func lastSignIn(_ subject: String) throws(StoreError) -> SignInRecord? {
        try checkOpen()
        return tables.withLock { $0.signIns.entries[subject] }
    }

    public func keepRefreshToken(_ subject: String, _ token: KeptRefreshToken) throws(StoreError) {
        try checkOpen()
        try checkKept(subject, token)
        let nowMs = clock.now() * 1000
        try change { tables throws(StoreError) in
            try tables.keepRefreshToken(subject, token, nowMs: nowMs, persist: { _ in })
        }
    }

    public func keptRefreshToken(_ subject: String) throws(StoreError) -> KeptRefreshToken? {
        try checkOpen()
        return tables.withLock { $0.refreshTokens.entries[subject] }
    }

    public func forgetRefreshToken(_ subject: String) throws(StoreError) {
        try checkOpen()
        try change { tables throws(StoreError) in try tables.forgetRefreshToken(subject, persist: { _ in }) }
    }

    public func close() { closed.store(true, ordering: .relaxed) }

    private func checkOpen() throws(StoreError) {
        if closed.load(ordering: .relaxed) { throw .closed }
    }

    /// A change under the lock, with the metrics' table sizes updated after it.
    private func change<Value>(_ body: (inout StoreTables) throws(StoreError) -> Value) throws(StoreError) -> Value {
        try tables.withLock { tables throws(StoreError) in
            defer { counters.recordSizes(claims: tables.claims, forwards: tables.forwards) }
            return try body(&tables)
        }
    }

    private func change<Value>(_ body: (inout StoreTables) -> Value) -> Value {
        tables.withLock { tables in
            defer { counters.recordSizes(claims: tables.claims, forwards: tables.forwards) }
            return body(&tables)
        }
    }
}

/// Subjects are Apple's `sub` (about 44 characters); the bound keeps a log record small.
func checkSubject(_ subject: String) throws(StoreError) {
    guard !subject.isEmpty, subject.utf8.count <= LogRecord.maximumSubjectBytes else {
        throw .invalidArgument("subject must be 1...\(LogRecord.maximumSubjectBytes) bytes")
    }
}
