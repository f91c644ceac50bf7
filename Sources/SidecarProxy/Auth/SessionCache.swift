import SidecarCrypto
import SidecarHTTP

/// A session the authenticator accepted, with what every request of it needs prepared once:
/// the identity fields to forward, rendered by `IdentityHeaders.write`.
final class OpenedSession {
    /// The sealed value (cookie or bearer token) it was opened from: the cache key.
    let token: [UInt8]
    let session: Session
    /// Opened under an older secret: re-seal it with the first one.
    let needsReseal: Bool
    let identityFields: HeadWriter
    /// What `IdentityHeaders.write` had to leave out (logged per forwarded request).
    let omission: IdentityHeaders.Omission
    /// From when a request of this token looks at its revalidation (`session.revalidate`):
    /// `lastRevalidation + period`, moved on while a check runs or after one Apple could not
    /// answer; `.max` without a refresh token or with revalidation off. One compare per request.
    var nextRevalidation: Int64
    /// With `assertion.enabled`: the whole `X-Auth-Assertion: <jwt>\r\n` field, appended after
    /// `identityFields`, and when it is to be replaced by a fresh signature (SPEC §4.9). One
    /// compare per request while it is fresh; empty when assertions are off.
    var assertionField: [UInt8] = []
    var assertionRenewAt: Int64 = .min

    /// `revalidate`: `session.revalidate` in seconds, 0 when off.
    init(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames, revalidate: Int64 = 0) {
        self.token = token
        self.session = session
        self.needsReseal = needsReseal
        nextRevalidation = revalidate > 0 && session.appleRefreshToken != nil
            ? session.lastRevalidation &+ revalidate : .max
        var fields = HeadWriter(capacity: 256)
        var scratch: [UInt8] = []
        omission = IdentityHeaders.write(session, names: names, into: &fields, scratch: &scratch)
        identityFields = fields
    }
}

/// A worker's recently opened sessions (loop thread only, no locks), so a request whose
/// cookie or bearer token was opened before costs a hash and a comparison instead of a
/// base64 decode, an AES-GCM open and a decode.
///
/// Direct-mapped: the slot is a keyed mix of the token's random nonce (see `slot(of:)`), and
/// a hit is confirmed by a
/// constant-time comparison of the whole token, so timing does not tell how much of a
/// guessed token matches a cached one. Only sessions that opened are inserted; the caller
/// still applies the time checks on a hit and empties the cache when revocations or the
/// settings change.
final class SessionCache {
    static let defaultCapacity = 1024

    private let slots: UnsafeMutableBufferPointer<OpenedSession?>
    private let mask: Int
    private let key0 = UInt64.random(in: .min ... .max)
    private let key1 = UInt64.random(in: .min ... .max)
    /// Entries held now.
    private(set) var count = 0

    /// `capacity` is rounded up to a power of two (at least 1).
    init(capacity: Int = defaultCapacity) {
        var size = 1
        while size < capacity { size <<= 1 }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: nil)
        mask = size - 1
    }

    deinit {
        slots.deinitialize()
        slots.deallocate()
    }

    var capacity: Int { slots.count }

    /// The entry opened from exactly `token`, if cached.
    func lookup(_ token: UnsafeRawBufferPointer) -> OpenedSession? {
        guard let entry = slots[slot(of: token)] else { return nil }
        let same = entry.token.withUnsafeBytes { ConstantTime.equals($0, token) }
        return same ? entry : nil
    }

    /// Keeps `entry` under its token, replacing whatever shared its slot.
    func insert(_ entry: OpenedSession) {
        let index = entry.token.withUnsafeBytes { slot(of: $0) }
        if slots[index] == nil { count += 1 }
        slots[index] = entry
    }

    /// Forgets `entry` (e.g. found expired) if it is still cached.
    func remove(_ entry: OpenedSession) {
        let index = entry.token.withUnsafeBytes { slot(of: $0) }
        guard slots[index] === entry else { return }
        slots[index] = nil
        count -= 1
    }

    func removeAll() {
        guard count > 0 else { return }
        for index in slots.indices { slots[index] = nil }
        count = 0
    }

    /// The slot of a sealed value: a keyed mix of the base64 characters that encode its
    /// random nonce (characters 8..<24 of `version ‖ key id ‖ nonce ‖ …`) and its length.
    /// Only values that opened are ever inserted — each with a nonce this sidecar drew — so
    /// nobody can aim entries at a slot, and the random key keeps probes unpredictable;
    /// a hit is still confirmed by the full constant-time comparison.
    private func slot(of token: UnsafeRawBufferPointer) -> Int {
        guard token.count >= 24 else {
            var hasher = Hasher()
            hasher.combine(key0)
            hasher.combine(bytes: token)
            return hasher.finalize() & mask
        }
        let a = token.loadUnaligned(fromByteOffset: 8, as: UInt64.self) ^ key0
        let b = token.loadUnaligned(fromByteOffset: 16, as: UInt64.self) ^ key1
        var h = a &* 0x9E37_79B9_7F4A_7C15 ^ b &* 0xC2B2_AE3D_27D4_EB4F ^ UInt64(token.count)
        h = (h ^ (h >> 31)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: h >> 29) & mask
    }
}
