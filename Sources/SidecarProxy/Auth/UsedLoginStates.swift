import Synchronization

/// States whose callback already ran, so a replayed form_post is refused before Apple sees
/// its code again. Keyed by 128 bits of a hash of the state.
///
/// Anyone can create login states (`/login` then a cancelled callback), so the memory is
/// bounded and each mark costs O(1): entries go into the current generation, which becomes
/// the previous one after a login state's lifetime (then nothing in the older one can still
/// be unexpired) or when it reaches `generationCapacity`. Under such a flood the oldest
/// marks are forgotten early; Apple's single-use codes still stop a replay of those.
final class UsedLoginStates: Sendable {
    struct Key: Hashable {
        let high: UInt64
        let low: UInt64

        /// The first 16 bytes of `digest` (a SHA-256).
        init(_ digest: [UInt8]) {
            var high: UInt64 = 0, low: UInt64 = 0
            for (i, byte) in digest.prefix(16).enumerated() {
                if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            self.high = high
            self.low = low
        }
    }

    private struct Generations {
        var current: [Key: Int64] = [:]
        var previous: [Key: Int64] = [:]
        var rotateAt: Int64 = .min
    }

    let generationCapacity: Int
    private let lifetime: Int64
    private let generations = Mutex(Generations())

    /// `lifetime`: the longest time a login state stays valid (seconds).
    init(lifetime: Int64 = AuthSettings.loginStateSeconds, generationCapacity: Int = 50_000) {
        self.lifetime = lifetime
        self.generationCapacity = max(1, generationCapacity)
    }

    /// Records `digest`; false when it was already recorded and has not expired.
    func markUsed(_ digest: [UInt8], until expiry: Int64, now: Int64) -> Bool {
        let key = Key(digest)
        return generations.withLock { g in
            if let seen = g.current[key] ?? g.previous[key], seen > now { return false }
            if now >= g.rotateAt || g.current.count >= generationCapacity {
                g.previous = g.current
                g.current = [:]
                g.rotateAt = now + lifetime
            }
            g.current[key] = expiry
            return true
        }
    }

    /// How many marks are kept (both generations).
    var count: Int { generations.withLock { $0.current.count + $0.previous.count } }
}
