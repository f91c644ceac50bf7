import Glibc

/// The process's file-descriptor limit (`RLIMIT_NOFILE`).
public enum DescriptorLimit {
    public struct Limits: Sendable, Equatable {
        public var soft: UInt64
        public var hard: UInt64
    }

    /// Descriptors kept aside from the connection budget: listeners, the admin port, epoll and
    /// wake-up descriptors per worker, the log, the store file, Apple and Redis connections.
    public static let reserve: UInt64 = 128

    /// The limits now.
    public static func current() -> Limits {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Limits(soft: 1024, hard: 1024) }
        return Limits(soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (a login shell's or a default unit's 1,024 is
    /// far below what `max_connections` needs; the hard limit is what the operator allowed).
    /// Returns the limits before and after.
    @discardableResult
    public static func raiseSoftToHard() -> (before: Limits, after: Limits) {
        let before = current()
        if before.soft < before.hard {
            var limit = rlimit(rlim_cur: rlim_t(before.hard), rlim_max: rlim_t(before.hard))
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return (before, current())
    }

    /// Descriptors `maxConnections` proxied connections need: one to the client and one to
    /// the upstream each, plus the reserve.
    public static func needed(forConnections maxConnections: Int) -> UInt64 {
        UInt64(max(0, maxConnections)) * 2 + reserve
    }

    /// How many proxied connections `limits` can serve (at least one).
    public static func fittingConnections(limits: Limits) -> Int {
        let usable = max(limits.soft, limits.hard)
        return Int(clamping: max(1, (usable - min(usable, reserve)) / 2))
    }

    /// A warning naming both numbers when `maxConnections` cannot be served within `limits`
    /// (as it would be after raising the soft limit to the hard one), nil when it fits.
    public static func shortfall(maxConnections: Int, limits: Limits) -> String? {
        let needed = needed(forConnections: maxConnections)
        let usable = max(limits.soft, limits.hard)
        guard needed > usable else { return nil }
        return "limits.max_connections: \(maxConnections) connections need about \(needed) file descriptors "
            + "(2 per proxied connection + \(reserve)) but the limit is \(usable) (soft \(limits.soft), hard \(limits.hard)): "
            + "raise it (ulimit -n, systemd LimitNOFILE=) or lower max_connections to \(fittingConnections(limits: limits))"
    }
}
