/// The single-use keys and forward queue of a memory or file store, with each change
/// written as "decide, persist, apply": the change is checked against the tables, handed
/// to `persist` (a no-op for memory, an fsynced append for the file store), and applied
/// only if that succeeded — so memory never claims more than the disk holds. Callers hold
/// the store's lock. (Revocations live in the `RevocationSet` all back-ends share.)
struct StoreTables {
    typealias Persist = (LogRecord) throws(StoreError) -> Void

    var claims: SingleUseKeySets
    var forwards: ForwardQueue
    var signIns = LatestPerUser<SignInRecord>()
    var refreshTokens = LatestPerUser<KeptRefreshToken>()

    /// `claimCapacity` keys of each `ClaimKind`.
    init(claimCapacity: Int, limits: StoreLimits) {
        claims = SingleUseKeySets(capacity: claimCapacity)
        forwards = ForwardQueue(limits: limits)
    }

    mutating func claim(_ key: ClaimKey, expiresAt: Int64, now: Int64, persist: Persist) -> ClaimResult {
        let kind = ClaimKind(key.namespace)
        switch claims[kind].admit(key, expiresAt: expiresAt, now: now) {
        case .alreadyUsed:
            return .alreadyUsed
        case .forgotten:
            return .unavailable(Self.forgottenReason(kind))
        case .full(nil):
            return .unavailable("single-use keys of kind \(kind.label) full (\(claims[kind].count) unexpired); retry later")
        case .full(let horizon?):
            // The horizon is recorded before anything is forgotten: after a crash the
            // forgotten keys are still refused.
            if let namespace = kind.namespace {
                do {
                    try persist(.claim(SingleUseKeySets.horizonKey(namespace), expiresAt: horizon))
                } catch {
                    return .unavailable("\(error)")
                }
            }
            claims[kind].forget(through: horizon)
            if claims[kind].isForgotten(expiresAt: expiresAt, now: now) { return .unavailable(Self.forgottenReason(kind)) }
        case .fresh:
            break
        }
        guard expiresAt > now else { return .claimed }  // nothing left to protect
        do {
            try persist(.claim(key, expiresAt: expiresAt))
        } catch {
            return .unavailable("\(error)")
        }
        claims[kind].insert(key, expiresAt: expiresAt)
        return .claimed
    }

    private static func forgottenReason(_ kind: ClaimKind) -> String {
        "single-use keys of kind \(kind.label) this old were forgotten to make room (a flood); start again"
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

    mutating func recordSignIn(_ subject: String, _ signIn: SignInRecord, nowMs: Int64, persist: Persist) throws(StoreError) {
        try persist(.signIn(subject, signIn))
        signIns.keep(subject, signIn, nowMs: nowMs)
    }

    mutating func keepRefreshToken(
        _ subject: String, _ token: KeptRefreshToken, nowMs: Int64, persist: Persist
    ) throws(StoreError) {
        try persist(.keepRefreshToken(subject, token))
        refreshTokens.keep(subject, token, nowMs: nowMs)
    }

    mutating func forgetRefreshToken(_ subject: String, persist: Persist) throws(StoreError) {
        guard refreshTokens.entries[subject] != nil else { return }
        try persist(.forgetRefreshToken(subject))
        refreshTokens.forget(subject)
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
            claims.apply(key, expiresAt: expiresAt)
        case .enqueueForward(let forward):
            forwards.insert(forward)
        case .ackForward(let id):
            forwards.remove(id)
        case .forwardAttempt(let id, let time):
            forwards.recordAttempt(id, at: time)
        case .forwardSequence(let next):
            if next > 0 { forwards.advanceSequence(past: next - 1) }
        case .signIn(let subject, let signIn):
            signIns.keep(subject, signIn, nowMs: signIn.atMs)
        case .keepRefreshToken(let subject, let token):
            refreshTokens.keep(subject, token, nowMs: token.atMs)
        case .forgetRefreshToken(let subject):
            refreshTokens.forget(subject)
        }
    }

    /// The live state as records, for a compacted log: unexpired claims and horizons, every
    /// pending forward, and the forward id sequence.
    func liveRecords(now: Int64) -> [LogRecord] {
        var records: [LogRecord] = [.forwardSequence(next: forwards.nextID)]
        records.append(contentsOf: claims.liveRecords(now: now))
        records.append(contentsOf: forwards.pending().map { .enqueueForward($0) })
        let cutoffMs = now * 1000 - SignInRecord.retentionSeconds * 1000
        for (subject, signIn) in signIns.entries where signIn.atMs > cutoffMs { records.append(.signIn(subject, signIn)) }
        for (subject, token) in refreshTokens.entries where token.atMs > cutoffMs {
            records.append(.keepRefreshToken(subject, token))
        }
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
