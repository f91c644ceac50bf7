import SidecarCrypto
import SidecarHTTP

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
/// A full set takes a new session only if it was seen before (`admit`): the doorkeeper of
/// TinyLFU, a two-probe Bloom filter of the sessions opened recently, emptied after every
/// `4 × capacity` sessions it took in. When more users are active than the cache holds
/// (100,000 users, one request each in turn), evicting on every miss made each miss also
/// free an entry and allocate another in memory that had long left the CPU caches: 16.4 µs
/// of user time per request instead of 11 µs without the churn (Benchmarks/RESULTS.md).
/// Users who come back within the window get in; one-off sessions do not push them out.
///
/// Nor does a newcomer push out an entry that has earned hits: a full set gives a way only
/// to a session seen before, and only in place of an entry with no hits since the hit counts
/// were last halved (every `4 × capacity` admissions: old favourites age out). When more
/// users cycle through than the cache holds (20,000 in turn through 8,192 entries), plain
/// LRU would replace every entry before its user came back — no hits at all, and each miss
/// would allocate an entry and evict another, memory traffic that grows with every worker
/// on the machine; this way a stable share stays cached and hits (capacity ÷ users of them).
///
/// Sized in entries (`session.cache_entries`); an entry (`OpenedSession`) holds the sealed
/// value, its rendered identity fields and the session's payload — about 800 bytes for a web
/// session with an Apple refresh token (Benchmarks/RESULTS.md), so the default 8,192 entries
/// take about 6.5 MiB per worker when full, and 2,000 active users stay cached with room to spare.
final class SessionCache {
    static let defaultCapacity = 8192
    static let ways = 4

    private let slots: UnsafeMutableBufferPointer<OpenedSession?>
    /// The mix of the token in each slot (0 when empty), compared before the token.
    private let tags: UnsafeMutableBufferPointer<UInt64>
    /// When each slot was last used, in `clock` ticks (for the least recently used).
    private let used: UnsafeMutableBufferPointer<UInt32>
    /// Hits of each slot's entry since it was inserted or the counts were last halved
    /// (saturating): an entry with hits is not given up for a newcomer.
    private let hits: UnsafeMutableBufferPointer<UInt8>
    /// Admissions of full sets since the hit counts were last halved.
    private var admissionsSinceAging = 0
    private var clock: UInt32 = 0
    private let setMask: Int
    /// The doorkeeper's bits (`doorkeeperBits`, a power of two) and how many sessions it took
    /// in since it was last emptied.
    private let seen: UnsafeMutableBufferPointer<UInt64>
    private let seenMask: Int
    private var seenCount = 0
    private let seenLimit: Int
    private let key0: UInt64
    private let key1: UInt64
    /// Entries held now.
    private(set) var count = 0

    /// `capacity` is rounded up to a power of two (at least `ways`; below that, one set of
    /// `capacity` rounded up to a power of two ways is used, as for tests of eviction).
    /// `mixKeys`: fixed keys for the mix, so that a test's outcome does not depend on a random
    /// draw (random otherwise, as it must be in service); `doorkeeperBits` (tests): more bits
    /// than the default 32 per entry, to rule out false positives.
    init(capacity: Int = defaultCapacity, mixKeys: (UInt64, UInt64)? = nil, doorkeeperBits: Int? = nil) {
        (key0, key1) = mixKeys ?? (UInt64.random(in: .min ... .max), UInt64.random(in: .min ... .max))
        var size = 1
        while size < capacity { size <<= 1 }
        slots = .allocate(capacity: size)
        slots.initialize(repeating: nil)
        tags = .allocate(capacity: size)
        tags.initialize(repeating: 0)
        used = .allocate(capacity: size)
        used.initialize(repeating: 0)
        hits = .allocate(capacity: size)
        hits.initialize(repeating: 0)
        waysPerSet = min(Self.ways, size)
        setMask = size / waysPerSet - 1
        // 32 bits per entry: after 4 × capacity sessions, 2 probes give ~5 % false positives.
        var bits = 64
        while bits < (doorkeeperBits ?? size * 32) { bits <<= 1 }
        seen = .allocate(capacity: bits / 64)
        seen.initialize(repeating: 0)
        seenMask = bits - 1
        seenLimit = size * 4
    }

    private let waysPerSet: Int

    deinit {
        slots.deinitialize()
        slots.deallocate()
        tags.deallocate()
        used.deallocate()
        hits.deallocate()
        seen.deallocate()
    }

    var capacity: Int { slots.count }

    /// The entry opened from exactly `token`, if cached.
    func lookup(_ token: UnsafeRawBufferPointer) -> OpenedSession? {
        let tag = mix(of: token)
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        for index in first..<(first + waysPerSet) where tags[index] == tag {
            guard let entry = slots[index] else { continue }
            if entry.withToken({ ConstantTime.equals($0, token) }) {
                clock &+= 1
                used[index] = clock
                if hits[index] != .max { hits[index] &+= 1 }
                return entry
            }
        }
        return nil
    }

    /// Keeps `entry` under its token: in a free way of its set, else instead of the set's
    /// least recently used entry.
    func insert(_ entry: OpenedSession) {
        let tag = entry.withToken { mix(of: $0) }
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        var victim = first
        for index in first..<(first + waysPerSet) {
            if slots[index] == nil { victim = index; break }
            if clock &- used[index] > clock &- used[victim] { victim = index }  // older (ages wrap)
        }
        place(entry, tag: tag, at: victim)
    }

    private func place(_ entry: OpenedSession, tag: UInt64, at index: Int) {
        if slots[index] == nil { count += 1 }
        slots[index] = entry
        tags[index] = tag
        clock &+= 1
        used[index] = clock
        hits[index] = 0
    }

    /// Keeps `entry` in a free way of its set; in a full set, only if its token was seen since
    /// the doorkeeper was last emptied and some way holds an entry without hits (then instead
    /// of the least recently used of those). Otherwise only remembers that it was seen.
    /// Returns whether it was kept.
    @discardableResult
    func admit(_ entry: OpenedSession) -> Bool {
        let tag = entry.withToken { mix(of: $0) }
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        var victim = -1
        for index in first..<(first + waysPerSet) {
            if slots[index] == nil {
                place(entry, tag: tag, at: index)
                return true
            }
            if hits[index] == 0, victim < 0 || clock &- used[index] > clock &- used[victim] { victim = index }
        }
        admissionsSinceAging += 1
        if admissionsSinceAging >= seenLimit {
            admissionsSinceAging = 0
            for index in hits.indices { hits[index] >>= 1 }
        }
        guard wasSeen(tag) else {
            markSeen(tag)
            return false
        }
        guard victim >= 0 else { return false }  // every way has earned its place
        place(entry, tag: tag, at: victim)
        return true
    }

    /// The doorkeeper's two probes: the mix's low bits and its bits from 34 on (the set index
    /// takes bits from 32 on, masked to fewer; the probes overlap it little).
    @inline(__always)
    private func probes(_ tag: UInt64) -> (Int, Int) {
        (Int(truncatingIfNeeded: tag) & seenMask, Int(truncatingIfNeeded: tag >> 34) & seenMask)
    }

    private func wasSeen(_ tag: UInt64) -> Bool {
        let (a, b) = probes(tag)
        return seen[a >> 6] & (1 << UInt64(a & 63)) != 0 && seen[b >> 6] & (1 << UInt64(b & 63)) != 0
    }

    private func markSeen(_ tag: UInt64) {
        if seenCount >= seenLimit {
            seen.update(repeating: 0)
            seenCount = 0
        }
        let (a, b) = probes(tag)
        seen[a >> 6] |= 1 << UInt64(a & 63)
        seen[b >> 6] |= 1 << UInt64(b & 63)
        seenCount += 1
    }

    /// Sessions the doorkeeper took in since it was last emptied.
    var doorkeeperCount: Int { seenCount }

    /// Forgets `entry` (e.g. found expired or revoked) if it is still cached.
    func remove(_ entry: OpenedSession) {
        let tag = entry.withToken { mix(of: $0) }
        let first = (Int(truncatingIfNeeded: tag >> 32) & setMask) * waysPerSet
        for index in first..<(first + waysPerSet) where slots[index] === entry {
            slots[index] = nil
            tags[index] = 0
            count -= 1
            return
        }
    }

    func removeAll() {
        seen.update(repeating: 0)
        seenCount = 0
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
