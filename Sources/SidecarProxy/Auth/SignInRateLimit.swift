import Glibc
import Logging
import SidecarCrypto
import SidecarHTTP

extension AuthEndpoint {
    /// The endpoints `limits.sign_in_rate` applies to: each starts or finishes a
    /// sign-in, stores a single-use key or calls Apple, so each is worth flooding.
    var isSignInRateLimited: Bool {
        switch self {
        case .login, .callback, .native, .nativeNonce, .nativeRefresh, .androidCallback, .revoke: true
        case .logout, .me, .check, .jwks, .appleNotifications: false
        }
    }

    /// Endpoints that answer JSON whoever asks.
    var alwaysAnswersJSON: Bool { self == .native || self == .nativeNonce || self == .nativeRefresh }
}

/// `limits.sign_in_rate` as a worker applies it: which requests count, the 429 it answers,
/// and its one log line per minute. The buckets themselves are process-wide
/// (`AuthShared.signInLimiter`); what this owns is the worker's view of the settings and the
/// throttle on its own warnings.
struct SignInRateLimit {
    private var settings: AuthSettings
    private let logger: Logger
    /// A flood refused by `limits.sign_in_rate` is one log line per minute, not one per request.
    private var refusalLog = RateLimitedLog(intervalMs: 60_000)

    init(settings: AuthSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// A reload: the new rate; the buckets (shared, kept across reloads) and the log throttle stay.
    mutating func apply(_ new: AuthSettings) { settings = new }

    /// nil when the request is within `limits.sign_in_rate` (or the endpoint is not limited);
    /// otherwise the 429 to answer. Runs before a body is read, so a refused request costs
    /// one lookup. `peer` is the connection's address as text (empty for a Unix socket);
    /// from a trusted proxy the last `X-Forwarded-For` entry is the client instead, as in
    /// the access log. `nowMicros`: the monotonic clock, read when the request counts.
    mutating func refusal(
        _ endpoint: AuthEndpoint, _ head: HTTPRequestHead, peer: [UInt8], peerTrusted: Bool,
        apiClient: @autoclosure () -> Bool, nowMicros: Int64? = nil
    ) -> LocalResponse? {
        let rate = settings.signInRate
        guard rate.isEnabled, endpoint.isSignInRateLimited,
              let address = Self.clientAddress(head, peer: peer, peerTrusted: peerTrusted) else { return nil }
        let now = nowMicros ?? Self.monotonicMicroseconds()
        let decision = settings.shared.signInLimiter.withLock {
            $0.admit(address, nowMicros: now, intervalMicros: rate.intervalMicroseconds, burst: rate.burst)
        }
        guard case .limited(let seconds) = decision else { return nil }
        if let skipped = refusalLog.shouldLog(nowMs: now / 1000) {
            logger.warning("sign-in requests over limits.sign_in_rate refused", metadata: [
                "reason": "sign_in_rate_limited", "rate": "\(rate)", "endpoint": "\(endpoint)",
                "retry_after": .stringConvertible(seconds), "others_since_last_line": .stringConvertible(skipped),
            ])
        }
        return Self.tooManyRequests(retryAfter: seconds, json: endpoint.alwaysAnswersJSON || apiClient())
    }

    static func tooManyRequests(retryAfter seconds: Int64, json: Bool) -> LocalResponse {
        var answer = json
            ? AuthPages.json(429, .object(["error": .string("rate_limited"), "retry_after": .integer(seconds)]))
            : LocalResponse(status: 429, reason: "Too Many Requests",
                            body: Array("too many sign-in requests from this address; retry in \(seconds) s\n".utf8))
        answer.extraFields.append(("Retry-After", Array(String(seconds).utf8)))
        return answer
    }

    /// The client the limit counts: the peer, or what a trusted proxy says it saw. A
    /// forwarded value that is no address counts as the proxy itself. nil for a peer on a
    /// Unix socket, which carries no address: the proxy in front has to limit those.
    static func clientAddress(_ head: HTTPRequestHead, peer: [UInt8], peerTrusted: Bool) -> SignInRateLimiter.Address? {
        if peerTrusted {
            let forwarded: SignInRateLimiter.Address? = head.withView { view in
                ClientPeer.forwardedClient(in: view).flatMap(SignInRateLimiter.Address.init(text:))
            }
            if let forwarded { return forwarded }
        }
        return peer.withUnsafeBytes { SignInRateLimiter.Address(text: $0) }
    }

    static func monotonicMicroseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }
}

extension SignInRateLimiter.Address {
    /// From an address as text — `192.0.2.1`, `2001:db8::1`, also `[2001:db8::1]:443` and
    /// `192.0.2.1:443` as some proxies write them — without allocating. IPv6 addresses count
    /// by their /64: one host can take any address of its network.
    init?(text: UnsafeRawBufferPointer) {
        var lower = 0, upper = text.count
        if upper > lower, text[lower] == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            lower += 1
            upper = close
        } else if let colon = text.firstIndex(of: UInt8(ascii: ":")), text.lastIndex(of: UInt8(ascii: ":")) == colon {
            upper = colon  // IPv4 with a port
        }
        let length = upper - lower
        guard length > 0, length <= 45 else { return nil }
        let isIPv6 = text[lower..<upper].contains(UInt8(ascii: ":"))
        let parsed: Self? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 48) { cString in
            for i in 0..<length { cString[i] = CChar(bitPattern: text[lower + i]) }
            cString[length] = 0
            if isIPv6 {
                var raw = in6_addr()
                guard inet_pton(AF_INET6, cString.baseAddress, &raw) == 1 else { return nil }
                return withUnsafeBytes(of: &raw) { bytes in
                    Self(ipv6High: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
                         low: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
                }
            }
            var raw = in_addr()
            guard inet_pton(AF_INET, cString.baseAddress, &raw) == 1 else { return nil }
            return Self(high: 0, low: 0xffff_0000_0000 | UInt64(UInt32(bigEndian: raw.s_addr)))
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// An IPv4-mapped address stays whole (it is IPv4); any other IPv6 address is its /64.
    private init(ipv6High high: UInt64, low: UInt64) {
        self = high == 0 && low >> 32 == 0xffff ? Self(high: 0, low: low) : Self(high: high, low: 0)
    }
}

/// The limiter's part of `/metrics`.
enum SignInRateMetrics {
    static func render(_ shared: AuthShared?) -> String {
        guard let shared else { return "" }
        let (limited, tracked) = shared.signInLimiter.withLock { ($0.limitedCount, $0.trackedAddresses) }
        return """
            # HELP sidecar_sign_in_rate_limited_total Sign-in requests refused with 429 by limits.sign_in_rate.
            # TYPE sidecar_sign_in_rate_limited_total counter
            sidecar_sign_in_rate_limited_total \(limited)
            # HELP sidecar_sign_in_rate_tracked_addresses Client addresses the sign-in rate limit remembers (at most 100000).
            # TYPE sidecar_sign_in_rate_tracked_addresses gauge
            sidecar_sign_in_rate_tracked_addresses \(tracked)

            """
    }
}
