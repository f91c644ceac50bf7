/// A worker's view of the revocations, used on that worker's thread only.
///
/// The per-request question — is this session revoked? — costs one atomic load when
/// nothing changed since the last request, and nothing more while there are no
/// revocations at all: no lock, no system call, no allocation. After a change the view
/// copies the new snapshot once (a lock and a reference-count bump), then looks up its
/// own dictionaries.
public struct RevocationView {
    private let revocations: RevocationSet
    private var current: RevocationSnapshot

    public init(_ revocations: RevocationSet) {
        self.revocations = revocations
        current = revocations.snapshot()
    }

    /// The generation of the snapshot this view reads (a worker may key caches on it:
    /// a cached session checked at an older generation must be checked again).
    public var generation: UInt64 { current.generation }

    /// Whether the set changed since this view last looked (one atomic load).
    @inline(__always)
    public var isStale: Bool { revocations.generation != current.generation }

    /// Whether the session is revoked. `sessionID` is the session's id (16 bytes; other
    /// lengths are hashed like every `Key128`); `issuedAtMs` its issue time in Unix
    /// milliseconds (seconds × 1000 when only seconds are known).
    @inline(__always)
    public mutating func isRevoked(sessionID: UnsafeRawBufferPointer, subject: String, issuedAtMs: Int64) -> Bool {
        refreshIfStale()
        if current.isEmpty { return false }
        return current.isRevoked(session: Key128(sessionID), subject: subject, issuedAtMs: issuedAtMs)
    }

    /// The same with the subject as UTF-8 bytes (a session read in place): a string is made
    /// only when some subject has been revoked.
    @inline(__always)
    public mutating func isRevoked(sessionID: UnsafeRawBufferPointer, subject: UnsafeRawBufferPointer,
                                   issuedAtMs: Int64) -> Bool {
        refreshIfStale()
        if current.isEmpty { return false }
        return current.isRevoked(session: Key128(sessionID), subject: subject, issuedAtMs: issuedAtMs)
    }

    @inline(__always)
    public mutating func isRevoked(sessionID: [UInt8], subject: String, issuedAtMs: Int64) -> Bool {
        refreshIfStale()
        if current.isEmpty { return false }
        return sessionID.withUnsafeBytes {
            current.isRevoked(session: Key128($0), subject: subject, issuedAtMs: issuedAtMs)
        }
    }

    /// Reloads the snapshot if the set moved on.
    @inline(__always)
    public mutating func refreshIfStale() {
        if isStale { current = revocations.snapshot() }
    }
}
