/// Compaction: the log rewritten with only what is still live.
///
/// An append-only log grows with every claim, revocation and forward, while most of them
/// expire (login states after minutes, session revocations after the session's lifetime)
/// or are acknowledged. When the file has grown past twice what its live entries take
/// (and past `StoreLimits.compactionMinimumBytes`, so small logs are left alone), it is
/// rewritten: unexpired revocations, claims and horizons, pending forwards and the forward id
/// sequence go to `<path>.compact`, which is synced, locked and renamed over the log, then
/// the directory is synced (`LogFile.replace`). Checks happen when the file reaches
/// `nextCompactionCheck` — twice its size after the last check — so the cost of counting
/// the live entries is amortized over as many appends as the file holds.
///
/// It runs under the store's lock, holding up other changes (not the request path) for
/// the rewrite: a few milliseconds per MiB. A failed compaction leaves the old log in use
/// and is reported through `health`; it is retried at the next check.
extension FileStore {
    func compactIfDue(_ state: inout State, now: Int64) {
        guard state.log.size >= state.nextCompactionCheck, state.log.failure == nil else { return }
        let live = Self.liveByteCount(state.tables, revocations.snapshot(), now: now)
        if state.log.size > 2 * live {
            do {
                try Self.compact(&state, revocations: revocations, counters: counters, limits: limits, now: now)
            } catch {
                counters.writeFailures.add(1, ordering: .relaxed)
                lastOutcome.withLock { $0 = .degraded("compaction failed: \(error)") }
                state.nextCompactionCheck = Self.nextCheck(after: state.log.size, limits: limits)
            }
        } else {
            state.nextCompactionCheck = Self.nextCheck(after: state.log.size, limits: limits)
        }
    }

    /// Compacts now (tests call it; also `compactIfDue` and open).
    public func compact() throws(StoreError) {
        let now = clock.now()
        try state.withLock { state throws(StoreError) in
            guard !state.closed else { throw StoreError.closed }
            try Self.compact(&state, revocations: revocations, counters: counters, limits: limits, now: now)
        }
    }

    static func compact(
        _ state: inout State, revocations: RevocationSet, counters: StoreCounters, limits: StoreLimits, now: Int64
    ) throws(StoreError) {
        revocations.prune(now: now)
        state.tables.claims.sweep(now: now)
        state.tables.signIns.sweep(nowMs: now * 1000)
        state.tables.refreshTokens.sweep(nowMs: now * 1000)
        var records = ReplayedRevocations.liveRecords(revocations.snapshot(), now: now)
        records.append(contentsOf: state.tables.liveRecords(now: now))
        var bytes = [UInt8]()
        bytes.reserveCapacity(records.reduce(0) { $0 + $1.framedByteCount })
        for record in records { bytes.append(contentsOf: record.framed()) }
        try state.log.replace(records: bytes)
        counters.compactions.add(1, ordering: .relaxed)
        state.nextCompactionCheck = nextCheck(after: state.log.size, limits: limits)
    }

    /// What a compacted log would take, counted without encoding anything.
    static func liveByteCount(_ tables: StoreTables, _ revocations: RevocationSnapshot, now: Int64) -> Int64 {
        var bytes = LogFile.header.count + LogRecord.forwardSequence(next: 0).framedByteCount
        let sessionRecord = LogRecord.revokeSession(Key128(high: 0, low: 0), expiresAt: 0).framedByteCount
        bytes += revocations.sessions.values.reduce(0) { $1 > now ? $0 + sessionRecord : $0 }
        for (subject, revocation) in revocations.subjects where revocation.keepUntil > now {
            bytes += LogRecord.revokeSubject(subject, revocation).framedByteCount
        }
        let claimRecord = LogRecord.claim(ClaimKey(namespace: .loginState, key: Key128(high: 0, low: 0)), expiresAt: 0)
        for table in tables.claims.tables {
            bytes += table.entries.values.reduce(0) { $1 > now ? $0 + claimRecord.framedByteCount : $0 }
            if table.horizon > now { bytes += claimRecord.framedByteCount }
        }
        for forward in tables.forwards.entries.values { bytes += LogRecord.enqueueForward(forward).framedByteCount }
        for (subject, signIn) in tables.signIns.entries { bytes += LogRecord.signIn(subject, signIn).framedByteCount }
        for (subject, token) in tables.refreshTokens.entries {
            bytes += LogRecord.keepRefreshToken(subject, token).framedByteCount
        }
        return Int64(bytes)
    }

    private static func nextCheck(after size: Int64, limits: StoreLimits) -> Int64 {
        max(limits.compactionMinimumBytes, 2 * size)
    }
}
