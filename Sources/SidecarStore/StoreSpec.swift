import Glibc

/// Which back-end `openStore` opens (`revocations.store`).
public enum StoreSpec: Sendable, Equatable, CustomStringConvertible {
    /// Per process, lost on restart.
    case memory
    /// An append-only log at `path` (absolute or relative to the working directory) that
    /// survives restarts and crashes; its directory must exist.
    case file(path: String)
    /// Shared by several replicas (Redis, `rediss://` with TLS, either behind Sentinel).
    case redis(RedisEndpoint)

    public var description: String {
        switch self {
        case .memory: return "memory"
        case .file(let path): return "file:\(path)"
        case .redis(let endpoint): return endpoint.description
        }
    }

    public static func == (a: StoreSpec, b: StoreSpec) -> Bool { a.description == b.description }
}

/// Bounds on what a store keeps; the defaults suit one sidecar.
public struct StoreLimits: Sendable, Equatable {
    /// Single-use keys of each kind (`ClaimKind`) the memory store keeps. When a kind is
    /// full, login states forget their oldest and refuse those no newer; the other kinds
    /// refuse new keys (503) until keys expire (see `ClaimKind.whenFull`).
    public var memoryClaimCapacity = 100_000
    /// The same for the file store, with the same policies. ~50 bytes of memory and 34 of
    /// disk per key: ~50 MB for a full kind.
    public var fileClaimCapacity = 1_000_000
    /// Undelivered forwards kept; beyond either bound `enqueueForward` throws.
    public var maximumPendingForwards = 10_000
    public var maximumPendingForwardBytes = 16 << 20
    /// One forward's payload (a verified Apple event is well under 4 KiB).
    public var maximumForwardPayloadBytes = 1 << 20
    /// The file store compacts when the log exceeds both this and twice its live records.
    public var compactionMinimumBytes: Int64 = 1 << 20

    public init() {}
}

/// The wall clock a store compares expiries to (Unix seconds); tests pass their own.
public struct StoreClock: Sendable {
    public let now: @Sendable () -> Int64

    public init(_ now: @escaping @Sendable () -> Int64) { self.now = now }

    /// `time(2)`: a vDSO call on Linux, no system call.
    public static let system = StoreClock { Int64(time(nil)) }
}
