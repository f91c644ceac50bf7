/// A worker's signed assertions by session id (loop thread only, no locks), so a session is
/// signed once per `ttl` (renewed after three quarters of it) however many requests it makes,
/// and whichever of its cookies or tokens (a re-sealed cookie keeps the session id) they
/// carry. Bounded: direct-mapped on the session id, which is random (drawn by this sidecar
/// and sealed, so nobody can aim sessions at one slot); a collision only costs a signature.
/// Every signature gets its own `jti`; a cached one is reused as it is.
public final class AssertionCache {
    public static let defaultCapacity = 1024

    public let signer: AssertionSigner
    private var slots: [SignedAssertion?]
    private let mask: Int
    /// Signatures made (for tests and metrics).
    public private(set) var signatures = 0

    public init(signer: AssertionSigner, capacity: Int = defaultCapacity) {
        self.signer = signer
        var size = 1
        while size < capacity { size <<= 1 }
        slots = Array(repeating: nil, count: size)
        mask = size - 1
    }

    /// The assertion for `session` at `now`: the cached one while `now < renewAt`, else a
    /// new signature (which replaces it).
    public func assertion(for session: Session, now: Int64) throws(CryptoError) -> SignedAssertion {
        let index = slot(of: session.id)
        if let cached = slots[index], cached.sessionID == session.id, now < cached.renewAt, now >= cached.issuedAt {
            return cached
        }
        let signed = try signer.sign(session, now: now)
        signatures += 1
        slots[index] = signed
        return signed
    }

    public func removeAll() {
        for index in slots.indices where slots[index] != nil { slots[index] = nil }
    }

    private func slot(of id: [UInt8]) -> Int {
        var h: UInt64 = 0
        for byte in id.prefix(8) { h = h << 8 | UInt64(byte) }
        return Int(truncatingIfNeeded: h) & mask
    }
}
