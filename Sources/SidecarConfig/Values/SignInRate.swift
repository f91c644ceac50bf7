/// `limits.sign_in_rate` and `limits.sign_in_burst`: how many requests one client
/// address may make to the sign-in endpoints — a token bucket of `burst` tokens refilled at
/// `count` per `periodSeconds`.
public struct SignInRate: Sendable, Equatable, CustomStringConvertible {
    /// Requests per `periodSeconds` on average; 0: no limit.
    public var count: Int
    public var periodSeconds: Int
    /// Requests allowed at once after a quiet spell.
    public var burst: Int

    public static let `default` = SignInRate(count: 20, periodSeconds: 1, burst: 100)

    public init(count: Int, periodSeconds: Int, burst: Int) {
        self.count = count
        self.periodSeconds = periodSeconds
        self.burst = burst
    }

    public var isEnabled: Bool { count > 0 }

    /// The time one request's token takes to come back.
    public var intervalMicroseconds: Int64 {
        isEnabled ? max(1, Int64(periodSeconds) * 1_000_000 / Int64(count)) : 0
    }

    public var description: String {
        guard isEnabled else { return "off" }
        let unit = periodSeconds == 1 ? "s" : periodSeconds == 60 ? "m" : "h"
        return "\(count)/\(unit), burst \(burst)"
    }

    /// `limits.sign_in_rate`'s value: the count and its period, without the burst.
    public struct Rate: Sendable, Equatable, CustomStringConvertible {
        public var count: Int
        public var periodSeconds: Int

        public var description: String {
            count == 0 ? "0" : "\(count)/\(periodSeconds == 1 ? "s" : periodSeconds == 60 ? "m" : "h")"
        }
    }

    /// `limits.sign_in_rate` as one value, so the key lands in one field.
    public var rate: Rate {
        get { Rate(count: count, periodSeconds: periodSeconds) }
        set {
            count = newValue.count
            periodSeconds = newValue.periodSeconds
        }
    }

    static let units: [(suffix: String, seconds: Int)] = [("s", 1), ("m", 60), ("h", 3600)]
    static let maximumCount = 1_000_000

    /// `0`, or `N/s`, `N/m`, `N/h`: the count and the period in seconds.
    static func parseRate(_ text: String) -> Result<Rate, ValueError> {
        if text == "0" { return .success(Rate(count: 0, periodSeconds: 1)) }
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }), let count = Int(parts[0]),
              let unit = units.first(where: { $0.suffix == parts[1] })
        else {
            return .failure(ValueError("invalid rate \(quoted(text)) (use e.g. 20/s, 600/m, 1000/h, or 0 to disable)"))
        }
        guard (1...maximumCount).contains(count) else {
            return .failure(ValueError("\(quoted(text)): the count must be 1–\(maximumCount) (0 alone disables the limit)"))
        }
        return .success(Rate(count: count, periodSeconds: unit.seconds))
    }
}
