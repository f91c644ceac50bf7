/// Active health checks: `upstream_health_check` for the top-level upstream, `health_check` in
/// an entry of `upstreams`. Unset `path`: none (passive health alone decides).
extension Config {
    public struct HealthCheck: Sendable, Equatable, ConfigSection {
        /// The path asked with GET; nil: no active check.
        public var path: String?
        public var interval = TimeSpan.seconds(10)
        public var timeout = TimeSpan.seconds(2)
        /// The status that means healthy: one code (`200`) or a class (`2xx`).
        public var status = ExpectedStatus(low: 200, high: 399)

        public init() {}

        static let path = "upstream_health_check"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.path, "path", "GET this path on each server every interval (unset: no active check)") { text, _ in
                text.hasPrefix("/") && !text.utf8.contains { $0 <= 0x20 || $0 == 0x7f }
                    ? .success(text) : .failure(ValueError("expected a path starting with / (no spaces)"))
            },
            .value(\.interval, "interval", "between two checks of a server", Parse.positiveDuration),
            .value(\.timeout, "timeout", "for the connection and the answer; past it the check failed",
                   Parse.positiveDuration),
            .value(\.status, "status", "healthy answers: a code (200), a class (2xx) or a range (200-399)",
                   ExpectedStatus.parse),
        ]
    }

    /// The status codes a health check accepts.
    public struct ExpectedStatus: Sendable, Equatable, CustomStringConvertible {
        public var low: Int
        public var high: Int

        public init(low: Int, high: Int) {
            self.low = low
            self.high = high
        }

        public func accepts(_ status: Int) -> Bool { (low...high).contains(status) }

        public var description: String {
            if low == high { return "\(low)" }
            if low % 100 == 0, high == low + 99 { return "\(low / 100)xx" }
            return "\(low)-\(high)"
        }

        static func parse(_ text: String) -> Result<ExpectedStatus, ValueError> {
            let usage = ValueError("invalid status \(quoted(text)) (use a code like 200, a class like 2xx or a range like 200-399)")
            if text.count == 3, text.hasSuffix("xx"), let first = Int(text.prefix(1)), (1...5).contains(first) {
                return .success(ExpectedStatus(low: first * 100, high: first * 100 + 99))
            }
            let bounds = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard (1...2).contains(bounds.count), let low = bounds.first ?? nil, let high = bounds.last ?? nil,
                  (100...599).contains(low), (low...599).contains(high)
            else { return .failure(usage) }
            return .success(ExpectedStatus(low: low, high: high))
        }
    }
}
