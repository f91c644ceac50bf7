import Synchronization

/// A subject's revocation: its sessions issued at or before `cutoffMs` are revoked.
public struct SubjectRevocation: Sendable, Equatable {
    /// Unix milliseconds. Apple's `event_time` is in milliseconds and a session issued in
    /// the same second as the event but after it must survive, so the cutoff keeps them.
    public var cutoffMs: Int64
    /// Unix seconds after which every session this could still revoke has expired anyway,
    /// so the entry may be forgotten.
    public var keepUntil: Int64

    public init(cutoffMs: Int64, keepUntil: Int64) {
        self.cutoffMs = cutoffMs
        self.keepUntil = keepUntil
    }

    /// Two revocations of one subject: the later cutoff revokes everything the earlier one
    /// did, and the entry lives as long as the longer of the two needs it.
    func merged(with other: SubjectRevocation) -> SubjectRevocation {
        SubjectRevocation(cutoffMs: max(cutoffMs, other.cutoffMs), keepUntil: max(keepUntil, other.keepUntil))
    }
}

/// The revocations at one generation: a value the workers copy and read without locks.
public struct RevocationSnapshot: Sendable {
    /// Counts the changes that could revoke a session; a view reloads when it moved.
    public fileprivate(set) var generation: UInt64 = 0
    /// Revoked session id → the session's own expiry (Unix seconds), when it may be forgotten.
    public fileprivate(set) var sessions: [Key128: Int64] = [:]
    /// Subject → cutoff; see `SubjectRevocation`.
    public fileprivate(set) var subjects: [String: SubjectRevocation] = [:]
    /// Expired entries are swept at most once per `RevocationSet.pruneIntervalSeconds`, not on
    /// every change: a sweep is a pass over everything.
    fileprivate var nextPruneAt: Int64 = .min

    public init() {}

    public var isEmpty: Bool { sessions.isEmpty && subjects.isEmpty }

    /// Whether a session is revoked. `issuedAtMs` is the session's issue time in Unix
    /// milliseconds; a session that only knows whole seconds passes `seconds * 1000`, which
    /// errs toward revoking a session issued in the very second of a cutoff.
    @inline(__always)
    public func isRevoked(session id: Key128, subject: String, issuedAtMs: Int64) -> Bool {
        if !sessions.isEmpty, sessions[id] != nil { return true }
        if !subjects.isEmpty, let entry = subjects[subject], issuedAtMs <= entry.cutoffMs { return true }
        return false
    }

    /// `isRevoked(session:subject:issuedAtMs:)` with the subject as UTF-8 bytes.
    public func isRevoked(session id: Key128, subject: UnsafeRawBufferPointer, issuedAtMs: Int64) -> Bool {
        if !sessions.isEmpty, sessions[id] != nil { return true }
        guard !subjects.isEmpty else { return false }
        let key = String(decoding: subject, as: UTF8.self)
        if let entry = subjects[key], issuedAtMs <= entry.cutoffMs { return true }
        return false
    }

    fileprivate mutating func pruneIfDue(now: Int64) {
        guard now >= nextPruneAt else { return }
        sessions = sessions.filter { $0.value > now }
        subjects = subjects.filter { $0.value.keepUntil > now }
        nextPruneAt = now + RevocationSet.pruneIntervalSeconds
    }
}

/// The revocations of a store, held in memory by every back-end (checking a
/// session never waits for a disk or the network). A back-end makes a revocation durable
/// (file) or shared (Redis) first, then records it here; the workers read it through a
/// `RevocationView`.
///
/// Writers take the lock, change the snapshot and bump an atomic generation; a reader
/// compares that generation with its copy's and only takes the lock when it moved. Copying
/// is cheap (the dictionaries are copy-on-write), but the first change after a copy pays
/// one full copy of the dictionaries: revocations are rare next to requests, so that is
/// the side to put the cost on.
public final class RevocationSet: Sendable {
    static let pruneIntervalSeconds: Int64 = 60

    private let generationCounter = Atomic<UInt64>(0)
    private let state = Mutex(RevocationSnapshot())

    public init() {}

    /// The current generation: one atomic load, no lock.
    @inline(__always)
    public var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// The current revocations (for a view's reload, compaction, a Redis resync's diff).
    public func snapshot() -> RevocationSnapshot { state.withLock { $0 } }

    /// How many entries are kept (for metrics).
    public var counts: (sessions: Int, subjects: Int) {
        state.withLock { ($0.sessions.count, $0.subjects.count) }
    }

    /// Revokes session `id` until `expiresAt` (Unix seconds). Already-expired entries are not
    /// kept: such a session is refused for its expiry anyway.
    public func revokeSession(_ id: Key128, until expiresAt: Int64, now: Int64) {
        guard expiresAt > now else { return }
        update(now: now) { snapshot in
            snapshot.sessions[id] = max(expiresAt, snapshot.sessions[id] ?? .min)
        }
    }

    /// Revokes `subject`'s sessions issued at or before `revocation.cutoffMs`; a second
    /// revocation of the same subject keeps the later cutoff.
    public func revokeSubject(_ subject: String, _ revocation: SubjectRevocation, now: Int64) {
        guard revocation.keepUntil > now else { return }
        update(now: now) { snapshot in
            let previous = snapshot.subjects[subject]
            snapshot.subjects[subject] = previous.map { $0.merged(with: revocation) } ?? revocation
        }
    }

    /// Replaces everything (a log replay at start, a full resync from a shared store).
    public func replaceAll(sessions: [Key128: Int64], subjects: [String: SubjectRevocation], now: Int64) {
        update(now: now) { snapshot in
            snapshot.sessions = sessions
            snapshot.subjects = subjects
            snapshot.nextPruneAt = .min
        }
    }

    /// Adds many at once, each merged as one revocation would be (a resync from a shared
    /// store: what this process knows and what the store knows, together — never less).
    public func merge(sessions: [Key128: Int64], subjects: [String: SubjectRevocation], now: Int64) {
        let liveSessions = sessions.filter { $0.value > now }
        let liveSubjects = subjects.filter { $0.value.keepUntil > now }
        guard !liveSessions.isEmpty || !liveSubjects.isEmpty else { return }
        update(now: now) { snapshot in
            for (id, expiresAt) in liveSessions {
                snapshot.sessions[id] = max(expiresAt, snapshot.sessions[id] ?? .min)
            }
            for (subject, revocation) in liveSubjects {
                snapshot.subjects[subject] = snapshot.subjects[subject].map { $0.merged(with: revocation) } ?? revocation
            }
        }
    }

    /// Forgets expired entries now (compaction calls it; changes call it once a minute).
    /// Not a new generation: nothing that was revoked becomes valid by it.
    public func prune(now: Int64) {
        state.withLock { snapshot in
            snapshot.nextPruneAt = .min
            snapshot.pruneIfDue(now: now)
        }
    }

    private func update(now: Int64, _ change: (inout RevocationSnapshot) -> Void) {
        state.withLock { snapshot in
            snapshot.pruneIfDue(now: now)
            change(&snapshot)
            snapshot.generation &+= 1
            generationCounter.store(snapshot.generation, ordering: .releasing)
        }
    }
}
