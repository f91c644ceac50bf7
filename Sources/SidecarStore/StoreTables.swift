/// The single-use keys and forward queue of a memory or file store, with each change
/// written as "decide, persist, apply": the change is checked against the tables, handed
/// to `persist` (a no-op for memory, an fsynced append for the file store), and applied
/// only if that succeeded — so memory never claims more than the disk holds. Callers hold
/// the store's lock. (Revocations live in the `RevocationSet` all back-ends share.)
struct StoreTables {
    typealias Persist = (LogRecord) throws(StoreError) -> Void

    var claims: SingleUseKeyTable
    var forwards: ForwardQueue

    init(claimCapacity: Int, whenFull: SingleUseKeyTable.WhenFull, limits: StoreLimits) {
        claims = SingleUseKeyTable(capacity: claimCapacity, whenFull: whenFull)
        forwards = ForwardQueue(limits: limits)
    }

    mutating func claim(_ key: ClaimKey, expiresAt: Int64, now: Int64, persist: Persist) -> ClaimResult {
        switch claims.admit(key, now: now) {
        case .alreadyUsed:
            return .alreadyUsed
        case .full:
            return .unavailable("single-use key table full (\(claims.count) unexpired keys); retry later")
        case .fresh:
            guard expiresAt > now else { return .claimed }  // nothing left to protect
            do {
                try persist(.claim(key, expiresAt: expiresAt))
            } catch {
                return .unavailable("\(error)")
            }
            claims.insert(key, expiresAt: expiresAt)
            return .claimed
        }
    }

    mutating func enqueueForward(payload: [UInt8], now: Int64, persist: Persist) throws(StoreError) -> ForwardID {
        let id = try forwards.admit(payloadCount: payload.count)
        let forward = PendingForward(id: id, payload: payload, enqueuedAt: now)
        try persist(.enqueueForward(forward))
        forwards.insert(forward)
        return id
    }

    mutating func ackForward(_ id: ForwardID, persist: Persist) throws(StoreError) {
        guard forwards.entries[id] != nil else { return }
        try persist(.ackForward(id))
        forwards.remove(id)
    }

    mutating func recordForwardAttempt(_ id: ForwardID, now: Int64, persist: Persist) throws(StoreError) {
        guard forwards.entries[id] != nil else { return }
        try persist(.forwardAttempt(id, at: now))
        forwards.recordAttempt(id, at: now)
    }

    /// Replays one log record (revocations go to `revocations`, applied by the caller once).
    mutating func apply(_ record: LogRecord, revocations: inout ReplayedRevocations) {
        switch record {
        case .revokeSession(let id, let expiresAt):
            revocations.sessions[id] = max(expiresAt, revocations.sessions[id] ?? .min)
        case .revokeSubject(let subject, let revocation):
            let previous = revocations.subjects[subject]
            revocations.subjects[subject] = previous.map { $0.merged(with: revocation) } ?? revocation
        case .claim(let key, let expiresAt):
            claims.insert(key, expiresAt: expiresAt)
        case .enqueueForward(let forward):
            forwards.insert(forward)
        case .ackForward(let id):
            forwards.remove(id)
        case .forwardAttempt(let id, let time):
            forwards.recordAttempt(id, at: time)
        case .forwardSequence(let next):
            if next > 0 { forwards.advanceSequence(past: next - 1) }
        }
    }

    /// The live state as records, for a compacted log: unexpired claims, every pending
    /// forward, and the forward id sequence.
    func liveRecords(now: Int64) -> [LogRecord] {
        var records: [LogRecord] = [.forwardSequence(next: forwards.nextID)]
        records.reserveCapacity(1 + claims.count + forwards.count)
        for (key, expiresAt) in claims.entries where expiresAt > now {
            records.append(.claim(key, expiresAt: expiresAt))
        }
        records.append(contentsOf: forwards.pending().map { .enqueueForward($0) })
        return records
    }
}

/// Revocations gathered during a replay, handed to the `RevocationSet` in one step.
struct ReplayedRevocations {
    var sessions: [Key128: Int64] = [:]
    var subjects: [String: SubjectRevocation] = [:]

    init() {}

    /// The unexpired revocations of `snapshot` as records, for a compacted log.
    static func liveRecords(_ snapshot: RevocationSnapshot, now: Int64) -> [LogRecord] {
        var records: [LogRecord] = []
        records.reserveCapacity(snapshot.sessions.count + snapshot.subjects.count)
        for (id, expiresAt) in snapshot.sessions where expiresAt > now {
            records.append(.revokeSession(id, expiresAt: expiresAt))
        }
        for (subject, revocation) in snapshot.subjects where revocation.keepUntil > now {
            records.append(.revokeSubject(subject, revocation))
        }
        return records
    }
}
