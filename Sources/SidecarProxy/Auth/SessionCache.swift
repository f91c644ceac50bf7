import SidecarCrypto
import SidecarHTTP

/// A session the authenticator accepted, with what every request of it needs prepared once:
/// the identity fields to forward, rendered by `IdentityHeaders.render`.
final class OpenedSession {
    /// The sealed value (cookie or bearer token) it was opened from: the cache key.
    let token: [UInt8]
    let session: Session
    /// Opened under an older secret: re-seal it with the first one.
    let needsReseal: Bool
    let identityFields: HeadWriter
    /// What `IdentityHeaders.render` had to leave out (logged per forwarded request).
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
    /// The revocation generation (`RevocationView.generation`) it was last checked at: a hit
    /// at a newer one checks it against the revocations again (one compare per request when
    /// nothing was revoked; a logout elsewhere does not empty the cache).
    var checkedRevocations: UInt64 = 0

    /// `revalidate`: `session.revalidate` in seconds, 0 when off. `scratch` (the encoded
    /// name) is the caller's, reused from entry to entry.
    init(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames, revalidate: Int64 = 0,
         scratch: inout [UInt8]) {
        self.token = token
        self.session = session
        self.needsReseal = needsReseal
        nextRevalidation = revalidate > 0 && session.appleRefreshToken != nil
            ? session.lastRevalidation &+ revalidate : .max
        (identityFields, omission) = IdentityHeaders.render(session, names: names, scratch: &scratch)
    }

    convenience init(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames,
                     revalidate: Int64 = 0) {
        var scratch: [UInt8] = []
        self.init(token: token, session: session, needsReseal: needsReseal, names: names, revalidate: revalidate,
                  scratch: &scratch)
    }
}

/// A worker's recently opened sessions (loop thread only, no locks), so a request whose
/// cookie or bearer token was opened before costs a hash and a comparison instead of a
/// base64 decode, an AES-GCM open and a decode.
///
/// Set-associative, `ways` entries per set: the set is a keyed mix of the token's random
/// nonce (see `mix(of:)`), each way keeps that mix as a tag, and a hit is confirmed by a
/// constant-time comparison of the whole token, so timing does not tell how much of a
/// guessed token matches a cached one. A full set gives up its least recently used entry.
/// Only sessions that opened are inserted; the caller still applies the time and
/// revocation checks on a hit.
///
/// Sized in entries; an entry holds the sealed value, the decoded session and its rendered
/// identity fields — 1,148 bytes of RSS for a web session with an Apple refresh token
/// (measured: Benchmarks/RESULTS.md, "many users"), so the default 8,192 entries are
/// about 9 MiB per worker when full, and 2,000 active users stay cached with room to spare.
final class SessionCache {
    static let defaultCapacity = 8192
    static let ways = 4

    private let slots: UnsafeMutableBufferPointer<OpenedSession?>
    /// The mix of the token in each slot (0 when empty), compared before the token.
    private let tags: UnsafeMutableBufferPointer<UInt64>
    /// When each slot was last used, in `clock` ticks (for the least recently used).
    private let used: UnsafeMutableBufferPointer<UInt32>
    private var clock: UInt32 = 0
    private let setMask: Int
    private let key0 = UInt64.random(in: .min ... .max)
    private let key1 = UInt64.random(in: .min ... .max)
    /// Entries held now.
    private(set) var count = 0

    /// `capacity` is rounded up to a power of two (at least `ways`; below that, one set of
    /// `capacity` rounded up to a power of two ways is used, as for tests of eviction).
    init(capacity: Int = defaultCapacity) {
        var size = 1
        while size < capacity { size <<= 1 }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: nil)
        tags = .allocate(capacity: size)
        tags.initialize(repeating: 0)
        used = .allocate(capacity: size)
        used.initialize(repeating: 0)
        waysPerSet = min(Self.ways, size)
        setMask = size / waysPerSet - 1
    }

    private let waysPerSet: Int

    deinit {
        slots.deinitialize()
        slots.deallocate()
        tags.deallocate()
        used.deallocate()
    }

    var capacity: Int { slots.count }

    /// The entry opened from exactly `token`, if cached.
    func lookup(_ token: UnsafeRawBufferPointer) -> OpenedSession? {
        let tag = mix(of: token)
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        for index in first..<(first + waysPerSet) where tags[index] == tag {
            guard let entry = slots[index] else { continue }
            if entry.token.withUnsafeBytes({ ConstantTime.equals($0, token) }) {
                clock &+= 1
                used[index] = clock
                return entry
            }
        }
        return nil
    }

    /// Keeps `entry` under its token: in a free way of its set, else instead of the set's
    /// least recently used entry.
    func insert(_ entry: OpenedSession) {
        let tag = entry.token.withUnsafeBytes { mix(of: $0) }
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        var victim = first
        for index in first..<(first + waysPerSet) {
            if slots[index] == nil { victim = index; break }
            if clock &- used[index] > clock &- used[victim] { victim = index }  // older (ages wrap)
        }
        if slots[victim] == nil { count += 1 }
        slots[victim] = entry
        tags[victim] = tag
        clock &+= 1
        used[victim] = clock
    }

    /// Forgets `entry` (e.g. found expired or revoked) if it is still cached.
    func remove(_ entry: OpenedSession) {
        let tag = entry.token.withUnsafeBytes { mix(of: $0) }
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        for index in first..<(first + waysPerSet) where slots[index] === entry {
            slots[index] = nil
            tags[index] = 0
            count -= 1
            return
        }
    }

    func removeAll() {
        guard count > 0 else { return }
        for index in slots.indices {
            slots[index] = nil
            tags[index] = 0
        }
        count = 0
    }

    /// A keyed mix of a sealed value: of the base64 characters that encode its random nonce
    /// (characters 8..<24 of `version ‖ key id ‖ nonce ‖ …`) and its length. Only values
    /// that opened are ever inserted — each with a nonce this sidecar drew — so nobody can
    /// aim entries at a set, and the random key keeps probes unpredictable; a hit is still
    /// confirmed by the full constant-time comparison. Never 0 (the empty slots' tag).
    private func mix(of token: UnsafeRawBufferPointer) -> UInt64 {
        guard token.count >= 24 else {
            var hasher = Hasher()
            hasher.combine(key0)
            hasher.combine(bytes: token)
            return UInt64(truncatingIfNeeded: hasher.finalize()) | 1
        }
        let a = token.loadUnaligned(fromByteOffset: 8, as: UInt64.self) ^ key0
        let b = token.loadUnaligned(fromByteOffset: 16, as: UInt64.self) ^ key1
        var h = a &* 0x9E37_79B9_7F4A_7C15 ^ b &* 0xC2B2_AE3D_27D4_EB4F ^ UInt64(token.count)
        h = (h ^ (h >> 31)) &* 0xBF58_476D_1CE4_E5B9
        return (h ^ (h >> 29)) | 1
    }
}
