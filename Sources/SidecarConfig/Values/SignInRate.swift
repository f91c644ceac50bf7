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

    static let units: [(suffix: String, seconds: Int)] = [("s", 1), ("m", 60), ("h", 3600)]
    static let maximumCount = 1_000_000

    /// `0`, or `N/s`, `N/m`, `N/h`: the count and the period in seconds.
    static func parseRate(_ text: String) -> Result<(count: Int, periodSeconds: Int), ValueError> {
        if text == "0" { return .success((0, 1)) }
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }), let count = Int(parts[0]),
              let unit = units.first(where: { $0.suffix == parts[1] })
        else {
            return .failure(ValueError("invalid rate \(quoted(text)) (use e.g. 20/s, 600/m, 1000/h, or 0 to disable)"))
        }
        guard (1...maximumCount).contains(count) else {
            return .failure(ValueError("\(quoted(text)): the count must be 1–\(maximumCount) (0 alone disables the limit)"))
        }
        return .success((count, unit.seconds))
    }
}

extension ConfigSchema {
    /// `limits.sign_in_rate` [`20/s`] and `limits.sign_in_burst` [100].
    func readSignInRate(_ limits: Section) -> SignInRate {
        let fallback = SignInRate.default
        let rate = limits.value("sign_in_rate", default: (fallback.count, fallback.periodSeconds), SignInRate.parseRate)
        let burst = limits.value("sign_in_burst", default: fallback.burst, Parse.integer(in: 1...SignInRate.maximumCount))
        return SignInRate(count: rate.count, periodSeconds: rate.periodSeconds, burst: burst)
    }
}
