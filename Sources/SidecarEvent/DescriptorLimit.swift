import Glibc

/// The process's file-descriptor limit (`RLIMIT_NOFILE`).
///
/// The budget: each proxied client connection is one descriptor, and each worker holds at most
/// as many upstream connections (busy, connecting or idle in a pool) as it may hold client
/// connections — an HTTP/2 connection's streams queue for one rather than open more — so
/// `max_connections` connections need at most two descriptors each, plus the reserve.
public enum DescriptorLimit {
    public struct Limits: Sendable, Equatable {
        public var soft: UInt64
        public var hard: UInt64

        public init(soft: UInt64, hard: UInt64) {
            self.soft = soft
            self.hard = hard
        }

        /// What the process can have after raising the soft limit to the hard one.
        public var usable: UInt64 { max(soft, hard) }
    }

    /// Descriptors kept aside from the connection budget: listeners, the admin port, epoll and
    /// wake-up descriptors per worker, the log, the store file, Apple and Redis connections.
    /// 128 from a limit of 256 up; half of a smaller one, so that a container's 64 or 128 still
    /// serves clients side by side (a fixed 128 left room for one connection at most).
    public static let fullReserve: UInt64 = 128

    public static func reserve(limit: UInt64) -> UInt64 { min(fullReserve, limit / 2) }

    /// Fewer connections than this fit: said at warning level (a sidecar serving a few clients
    /// at a time stalls the rest behind a slow one).
    public static let smallBudget = 64

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

    /// Descriptors `maxConnections` proxied connections need under `limits`: one to the client
    /// and at most one to an upstream each (HTTP/2 streams included, see above), plus the reserve.
    public static func needed(forConnections maxConnections: Int, limits: Limits) -> UInt64 {
        UInt64(max(0, maxConnections)) * 2 + reserve(limit: limits.usable)
    }

    /// How many proxied connections `limits` can serve (at least one).
    public static func fittingConnections(limits: Limits) -> Int {
        let usable = limits.usable
        return Int(clamping: max(1, (usable - min(usable, reserve(limit: usable))) / 2))
    }

    /// What the start-up log says of a `max_connections` left unset, and at which level: a
    /// warning when the limit leaves room for only a few connections. nil when the default fits.
    public static func automatic(defaultConnections: Int, limits: Limits) -> (connections: Int, message: String, warn: Bool)? {
        let fitting = fittingConnections(limits: limits)
        guard fitting < defaultConnections else { return nil }
        var message = "limits.max_connections: \(fitting), what the file-descriptor limit allows (the default is \(defaultConnections))"
        let warn = fitting < smallBudget
        if warn {
            message += "; only \(fitting) clients can be served at once (the limit is \(limits.usable), "
                + "\(reserve(limit: limits.usable)) kept aside): raise it (ulimit -n, systemd LimitNOFILE=)"
        }
        return (fitting, message, warn)
    }

    /// A warning naming both numbers when `maxConnections` cannot be served within `limits`
    /// (as it would be after raising the soft limit to the hard one), nil when it fits.
    public static func shortfall(maxConnections: Int, limits: Limits) -> String? {
        let needed = needed(forConnections: maxConnections, limits: limits)
        let usable = limits.usable
        guard needed > usable else { return nil }
        return "limits.max_connections: \(maxConnections) connections need about \(needed) file descriptors "
            + "(2 per proxied connection + \(reserve(limit: usable))) but the limit is \(usable) (soft \(limits.soft), hard \(limits.hard)): "
            + "raise it (ulimit -n, systemd LimitNOFILE=) or lower max_connections to \(fittingConnections(limits: limits))"
    }
}
