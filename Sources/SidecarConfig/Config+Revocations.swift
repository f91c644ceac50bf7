import Foundation
import SidecarRESP

extension Config {
    /// `revocations.*`: the store, and for Redis its passwords, key prefix and CA file.
    public struct Revocations: Sendable, Equatable, ConfigSection {
        public var store = RevocationStore.memory
        /// Redis AUTH password (`env:`/`file:`), nil for none: the Redis servers' (behind
        /// Sentinel, the master's), never the sentinels'.
        public var password: Secret?
        /// The sentinels' own AUTH password, nil for none (`redis+sentinel://` only).
        public var sentinelPassword: Secret?
        /// Prepended to every Redis key and channel, so several deployments share one Redis.
        public var keyPrefix = "sidecar:"
        /// Extra trust anchors for `rediss://` and `rediss+sentinel://` (a private CA).
        public var caFile: String?
        /// Single-use keys of each kind a memory or file store keeps; nil: the store's default.
        public var maxSingleUseKeys: Int?

        public init() {}

        /// The password by where it comes from, not by value (`Secret` is not Equatable).
        public static func == (a: Revocations, b: Revocations) -> Bool {
            a.store == b.store && a.keyPrefix == b.keyPrefix && a.caFile == b.caFile
                && a.password?.source == b.password?.source && a.maxSingleUseKeys == b.maxSingleUseKeys
                && a.sentinelPassword?.source == b.sentinelPassword?.source
        }

        static let path = "revocations"
        static let keys: [ConfigKey<Self>] = [
            .value(\.store, "store",
                   "memory (lost on restart), file:/var/lib/sidecar/store (durable), redis://host:6379/0 or rediss://… "
                       + "(shared by replicas; also env:NAME), redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster/0 or "
                       + "rediss+sentinel://… (the master found through Redis Sentinel)", store),
            .optional(\.password, "password", "Redis AUTH (env: or file:); behind Sentinel, the master's", password),
            .optional(\.sentinelPassword, "sentinel_password", "the sentinels' own AUTH, if they require one", password),
            .value(\.keyPrefix, "key_prefix", "every key and channel starts with it (quote a trailing colon)") { text in
                text.utf8.count <= 64 && !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
                    ? .success(text) : .failure(ValueError("key_prefix must be at most 64 visible characters without spaces"))
            },
            .optional(\.caFile, "ca_file", "extra trust anchors for rediss:// (relative to this file)") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .optional(\.maxSingleUseKeys, "max_single_use_keys",
                      "memory/file stores: spent login states, native nonces and notification ids kept per kind "
                          + "(default 100000 memory, 1000000 file); a full kind forgets its oldest login states "
                          + "(refusing those no newer) or refuses new nonces/ids with 503 until some expire") { text, _ in
                Parse.integer(in: 4...100_000_000)(text)
            },
        ]

        /// `env:NAME` too, so a Redis URL can come from a Kubernetes Secret (`file:` is the file store).
        private static func store(_ text: String, _ context: ParseContext) -> Result<RevocationStore, ValueError> {
            let parse = Parse.revocationStore(baseDirectory: context.baseDirectory)
            guard text.hasPrefix("env:") else { return parse(text) }
            return Secret.resolve(text, environment: context.environment, baseDirectory: context.baseDirectory)
                .flatMap { resolved in
                    parse(resolved.string.trimmingCharacters(in: .whitespacesAndNewlines))
                        .mapError { ValueError("\(text): \($0.message)") }
                }
        }

        private static func password(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Secret.resolve(text, environment: context.environment, baseDirectory: context.baseDirectory).flatMap { secret in
                secret.bytes.isEmpty || secret.bytes.contains(where: { $0 == 0x0D || $0 == 0x0A })
                    ? .failure(ValueError("password from \(secret.source) is empty or holds a line break"))
                    : .success(secret)
            }
        }
    }
}

public enum RevocationStore: Sendable, Equatable, CustomStringConvertible {
    case memory
    case file(path: String)
    /// One Redis server, or the master of a set that Redis Sentinel watches.
    case redis(RedisAddress)

    public var isRedis: Bool {
        if case .redis = self { return true }
        return false
    }

    /// `rediss://` or `rediss+sentinel://`.
    public var usesTLS: Bool {
        if case .redis(let address) = self { return address.tls }
        return false
    }

    public var description: String {
        switch self {
        case .memory: return "memory"
        case .file(let path): return "file:\(path)"
        case .redis(let address): return address.description
        }
    }
}
