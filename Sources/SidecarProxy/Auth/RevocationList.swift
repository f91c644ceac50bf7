import SidecarCrypto
import Synchronization

/// Revoked sessions (SPEC §6, `memory` store): by session id (logout) and by subject for
/// sessions issued at or before a time (Apple account events). Writers take a lock and bump
/// a generation; readers keep a per-worker `RevocationView` and reload it only when the
/// generation moved, so the per-request check is one atomic load and, usually, nothing else.
final class RevocationList: Sendable {
    private let generationCounter = Atomic<UInt64>(0)
    private let state = Mutex(RevocationSnapshot())

    var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// Revokes one session until it would have expired anyway.
    func revokeSession(id: [UInt8], until expiresAt: Int64, now: Int64) {
        update(now: now) { $0.sessionIDs[id] = expiresAt }
    }

    /// Revokes every session of `subject` issued at or before `issuedAtOrBefore` (seconds).
    func revokeSubject(_ subject: String, issuedAtOrBefore cutoff: Int64, keepUntil: Int64, now: Int64) {
        update(now: now) { snapshot in
            let previous = snapshot.subjects[subject]?.cutoff ?? .min
            snapshot.subjects[subject] = (max(previous, cutoff), keepUntil)
        }
    }

    func snapshot() -> (generation: UInt64, snapshot: RevocationSnapshot) {
        state.withLock { ($0.generation, $0) }
    }

    private func update(now: Int64, _ change: (inout RevocationSnapshot) -> Void) {
        state.withLock { snapshot in
            snapshot.prune(now: now)
            change(&snapshot)
            snapshot.generation &+= 1
            generationCounter.store(snapshot.generation, ordering: .releasing)
        }
    }
}

/// An immutable copy of the revocations, checked on the loop thread without locks.
struct RevocationSnapshot: Sendable {
    fileprivate(set) var generation: UInt64 = 0
    /// Session id → when the entry may be forgotten (the session's own expiry).
    fileprivate(set) var sessionIDs: [[UInt8]: Int64] = [:]
    /// Subject → sessions issued at or before `cutoff` are revoked; forgotten after `keepUntil`.
    fileprivate(set) var subjects: [String: (cutoff: Int64, keepUntil: Int64)] = [:]

    var isEmpty: Bool { sessionIDs.isEmpty && subjects.isEmpty }

    func isRevoked(_ session: Session) -> Bool {
        if sessionIDs[session.id] != nil { return true }
        if let entry = subjects[session.subject], session.issuedAt <= entry.cutoff { return true }
        return false
    }

    fileprivate mutating func prune(now: Int64) {
        sessionIDs = sessionIDs.filter { $0.value > now }
        subjects = subjects.filter { $0.value.keepUntil > now }
    }
}

/// A worker's view of the revocation list.
struct RevocationView {
    private let list: RevocationList
    private var current = RevocationSnapshot()

    init(list: RevocationList) { self.list = list }

    mutating func isRevoked(_ session: Session) -> Bool {
        if list.generation != current.generation { current = list.snapshot().snapshot }
        return !current.isEmpty && current.isRevoked(session)
    }
}
