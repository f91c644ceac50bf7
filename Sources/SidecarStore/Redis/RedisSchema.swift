import SidecarRESP

/// How the store lays its data out in Redis, under `revocations.key_prefix` (P):
///
/// - `P{revoked:sessions}` hash: session id (hex) → its expiry (Unix seconds)
/// - `P{revoked:subjects}` hash: subject → `cutoffMs:keepUntil`
/// - `Pclaim:<namespace>:<key hex>`: a single-use key, `SET NX PX` (Redis expires it)
/// - `Pforwards` hash: id → payload; `Pforwards:meta` hash: id → `enqueuedAt:attempts:lastAttemptAt`;
///   `Pforwards:seq` the last id
/// - channel `Prevocations`: `s <session hex> <expiresAt>` and `u <cutoffMs> <keepUntil> <subject>`
///
/// Each change is one Lua script, so the hash update and its publication happen together
/// (no replica can resync between them and miss the message).
struct RedisSchema {
    let prefix: String

    var sessions: String { prefix + "revoked:sessions" }
    var subjects: String { prefix + "revoked:subjects" }
    var channel: String { prefix + "revocations" }
    var forwards: String { prefix + "forwards" }
    var forwardMeta: String { prefix + "forwards:meta" }
    var forwardSequence: String { prefix + "forwards:seq" }
    /// A user's last sign-in, `<ms> <platform>`, expiring with `SignInRecord.retentionSeconds`.
    func signIn(_ subject: String) -> String { prefix + "signin:" + subject }
    /// A user's kept Apple refresh token, `<ms> <sealed>`, expiring as a sign-in does.
    func refreshToken(_ subject: String) -> String { prefix + "refresh:" + subject }

    func claim(_ namespace: ClaimNamespace, _ key: Key128) -> String {
        prefix + "claim:\(namespace.rawValue):" + key.hex
    }

    /// KEYS: sessions hash, channel. ARGV: id hex, expiresAt.
    static let revokeSession = """
        local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
        local exp = math.max(cur, tonumber(ARGV[2]))
        redis.call('HSET', KEYS[1], ARGV[1], exp)
        redis.call('PUBLISH', KEYS[2], 's ' .. ARGV[1] .. ' ' .. exp)
        return 1
        """

    /// KEYS: subjects hash, channel. ARGV: subject, cutoffMs, keepUntil. A later cutoff wins.
    static let revokeSubject = """
        local c, k = tonumber(ARGV[2]), tonumber(ARGV[3])
        local cur = redis.call('HGET', KEYS[1], ARGV[1])
        if cur then
          local a, b = string.match(cur, '^(%d+):(%d+)$')
          if a then c = math.max(c, tonumber(a)); k = math.max(k, tonumber(b)) end
        end
        redis.call('HSET', KEYS[1], ARGV[1], string.format('%d:%d', c, k))
        redis.call('PUBLISH', KEYS[2], string.format('u %d %d ', c, k) .. ARGV[1])
        return 1
        """

    /// KEYS: forwards, meta, seq. ARGV: payload, now, max count. Returns the id, or -1 when full.
    static let enqueueForward = """
        if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return -1 end
        local id = redis.call('INCR', KEYS[3])
        redis.call('HSET', KEYS[1], id, ARGV[1])
        redis.call('HSET', KEYS[2], id, ARGV[2] .. ':0:0')
        return id
        """

    /// KEYS: forwards, meta. ARGV: id, now.
    static let recordForwardAttempt = """
        local cur = redis.call('HGET', KEYS[2], ARGV[1])
        if not cur then return 0 end
        local e, a = string.match(cur, '^(%d+):(%d+):')
        redis.call('HSET', KEYS[2], ARGV[1], e .. ':' .. (tonumber(a) + 1) .. ':' .. ARGV[2])
        return 1
        """

    /// KEYS: forwards, meta. Returns {forwards flattened, meta flattened}.
    static let pendingForwards = """
        return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
        """

    /// KEYS: sessions, subjects. ARGV: now. Drops expired entries, returns both hashes.
    static let resync = """
        local now = tonumber(ARGV[1])
        local s = redis.call('HGETALL', KEYS[1])
        for i = 1, #s, 2 do
          if tonumber(s[i + 1]) <= now then redis.call('HDEL', KEYS[1], s[i]) end
        end
        local u = redis.call('HGETALL', KEYS[2])
        for i = 1, #u, 2 do
          local k = tonumber(string.match(u[i + 1], ':(%d+)$') or '0')
          if k <= now then redis.call('HDEL', KEYS[2], u[i]) end
        end
        return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
        """

    /// One revocation as published on the channel.
    enum Message: Equatable {
        case session(Key128, expiresAt: Int64)
        case subject(String, SubjectRevocation)
    }

    static func decode(_ payload: [UInt8]) -> Message? {
        let parts = payload.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false)
        guard let kind = parts.first, kind.count == 1 else { return nil }
        switch kind.first {
        case UInt8(ascii: "s"):
            guard parts.count == 3, let id = Key128(hex: Array(parts[1])), let expiry = number(parts[2]) else { return nil }
            return .session(id, expiresAt: expiry)
        case UInt8(ascii: "u"):
            guard parts.count == 4, let cutoff = number(parts[1]), let keep = number(parts[2]), !parts[3].isEmpty else { return nil }
            return .subject(String(decoding: parts[3], as: UTF8.self), SubjectRevocation(cutoffMs: cutoff, keepUntil: keep))
        default:
            return nil
        }
    }

    static func number(_ bytes: ArraySlice<UInt8>) -> Int64? {
        Int64(String(decoding: bytes, as: UTF8.self))
    }

    /// `[k1, v1, k2, v2, …]` as pairs of byte arrays.
    static func pairs(_ value: RESPValue?) -> [([UInt8], [UInt8])]? {
        guard case .array(let items?) = value, items.count % 2 == 0 else { return nil }
        var out: [([UInt8], [UInt8])] = []
        out.reserveCapacity(items.count / 2)
        var index = 0
        while index < items.count {
            guard let key = items[index].bytes, let value = items[index + 1].bytes else { return nil }
            out.append((key, value))
            index += 2
        }
        return out
    }
}
