import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `limits.sign_in_rate`: a token bucket per client address, bounded in addresses.
final class SignInRateLimiterTests: XCTestCase {
    private let second: Int64 = 1_000_000

    private func address(_ text: String) -> SignInRateLimiter.Address? {
        Array(text.utf8).withUnsafeBytes { SignInRateLimiter.Address(text: $0) }
    }

    private func ip(_ text: String) throws -> SignInRateLimiter.Address { try XCTUnwrap(address(text), text) }

    func testABurstIsAllowedThenTheRateWithRetryAfterRoundedUp() throws {
        var limiter = SignInRateLimiter()
        let client = try ip("192.0.2.1")
        let interval = second / 20  // 20/s
        for i in 0..<100 {
            XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: interval, burst: 100), .allowed, "\(i)")
        }
        XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: interval, burst: 100), .limited(retryAfterSeconds: 1))
        XCTAssertEqual(limiter.limitedCount, 1)
        // One second later twenty tokens are back, not more.
        for _ in 0..<20 { XCTAssertEqual(limiter.admit(client, nowMicros: second, intervalMicros: interval, burst: 100), .allowed) }
        XCTAssertNotEqual(limiter.admit(client, nowMicros: second, intervalMicros: interval, burst: 100), .allowed)
    }

    func testRetryAfterIsTheWaitForTheNextTokenInWholeSeconds() throws {
        var limiter = SignInRateLimiter()
        let client = try ip("192.0.2.1")
        let hourly = 3_600 * second  // 1/h, burst 1
        XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: hourly, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: hourly, burst: 1), .limited(retryAfterSeconds: 3_600))
        XCTAssertEqual(limiter.admit(client, nowMicros: 1, intervalMicros: hourly, burst: 1), .limited(retryAfterSeconds: 3_600))
        XCTAssertEqual(limiter.admit(client, nowMicros: hourly - 1, intervalMicros: hourly, burst: 1), .limited(retryAfterSeconds: 1))
        XCTAssertEqual(limiter.admit(client, nowMicros: hourly, intervalMicros: hourly, burst: 1), .allowed)
    }

    func testRefusedRequestsDoNotDelayTheNextToken() throws {
        var limiter = SignInRateLimiter()
        let client = try ip("192.0.2.1")
        XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
        for _ in 0..<50 { XCTAssertNotEqual(limiter.admit(client, nowMicros: 10, intervalMicros: second, burst: 1), .allowed) }
        XCTAssertEqual(limiter.admit(client, nowMicros: second, intervalMicros: second, burst: 1), .allowed)
    }

    func testAddressesHaveTheirOwnBuckets() throws {
        var limiter = SignInRateLimiter()
        XCTAssertEqual(limiter.admit(try ip("127.0.0.1"), nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
        XCTAssertNotEqual(limiter.admit(try ip("127.0.0.1"), nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(try ip("127.0.0.2"), nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(try ip("2001:db8:0:1::1"), nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(try ip("2001:db8:0:2::1"), nowMicros: 0, intervalMicros: second, burst: 1), .allowed)
    }

    /// Bounded: past the capacity the least recently seen address is forgotten (and starts
    /// with a full bucket again); a recently seen one keeps its state.
    func testTheLeastRecentlySeenAddressIsForgottenAtCapacity() throws {
        var limiter = SignInRateLimiter(capacity: 3)
        let a = try ip("10.0.0.1"), b = try ip("10.0.0.2"), c = try ip("10.0.0.3"), d = try ip("10.0.0.4")
        for client in [a, b, c] { XCTAssertEqual(limiter.admit(client, nowMicros: 0, intervalMicros: second, burst: 1), .allowed) }
        XCTAssertNotEqual(limiter.admit(a, nowMicros: 1, intervalMicros: second, burst: 1), .allowed)  // a is now the newest
        XCTAssertEqual(limiter.admit(d, nowMicros: 2, intervalMicros: second, burst: 1), .allowed)  // forgets b
        XCTAssertEqual(limiter.trackedAddresses, 3)
        XCTAssertNotEqual(limiter.admit(a, nowMicros: 3, intervalMicros: second, burst: 1), .allowed)
        XCTAssertNotEqual(limiter.admit(c, nowMicros: 3, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(b, nowMicros: 4, intervalMicros: second, burst: 1), .allowed)  // forgotten: fresh; forgets d
        XCTAssertEqual(limiter.admit(d, nowMicros: 5, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.trackedAddresses, 3)
    }

    func testManyAddressesStayWithinTheCapacity() throws {
        var limiter = SignInRateLimiter(capacity: 1_000)
        for i in 0..<5_000 {
            let client = try ip("10.\(i >> 16 & 255).\(i >> 8 & 255).\(i & 255)")
            XCTAssertEqual(limiter.admit(client, nowMicros: Int64(i), intervalMicros: second, burst: 1), .allowed)
        }
        XCTAssertEqual(limiter.trackedAddresses, 1_000)
        XCTAssertNotEqual(limiter.admit(try ip("10.0.19.135"), nowMicros: 5_000, intervalMicros: second, burst: 1), .allowed)
        XCTAssertEqual(limiter.admit(try ip("10.0.0.0"), nowMicros: 5_000, intervalMicros: second, burst: 1), .allowed)
    }

    func testAddressTextForms() throws {
        XCTAssertEqual(try ip("192.0.2.1"), try ip("192.0.2.1:443"))
        XCTAssertEqual(try ip("192.0.2.1"), try ip("::ffff:192.0.2.1"))
        XCTAssertNotEqual(try ip("192.0.2.1"), try ip("192.0.2.2"))
        XCTAssertEqual(try ip("2001:db8::1"), try ip("[2001:db8::2]:443"), "one /64")
        XCTAssertEqual(try ip("2001:db8::1"), try ip("[2001:db8::ffff:1]"))
        XCTAssertNotEqual(try ip("2001:db8::1"), try ip("2001:db8:0:1::1"))
        XCTAssertNotEqual(try ip("::1"), try ip("0.0.0.0"))
        for text in ["", "unknown", "192.0.2", "1.2.3.4.5", "[::1", "2001:db8::1%eth0", String(repeating: "1", count: 60)] {
            XCTAssertNil(address(text), text)
        }
    }

    func testTheClientIsTheLastForwardedEntryOnlyFromATrustedPeer() throws {
        let text = "POST /.auth/callback HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 203.0.113.9, 198.51.100.7\r\n\r\n"
        let head = try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8)))
        let peer = Array("10.0.0.1".utf8)
        XCTAssertEqual(SignInRateLimit.clientAddress(head, peer: peer, peerTrusted: true), try ip("198.51.100.7"))
        XCTAssertEqual(SignInRateLimit.clientAddress(head, peer: peer, peerTrusted: false), try ip("10.0.0.1"))
        let garbage = try XCTUnwrap(try HTTPRequestHead.parse(Array("GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: unknown\r\n\r\n".utf8)))
        XCTAssertEqual(SignInRateLimit.clientAddress(garbage, peer: peer, peerTrusted: true), try ip("10.0.0.1"))
        XCTAssertNil(SignInRateLimit.clientAddress(garbage, peer: [], peerTrusted: false), "a Unix-socket peer has no address")
    }

    func testTheRefusalCarriesRetryAfterAndAShortBody() {
        let json = SignInRateLimit.tooManyRequests(retryAfter: 3, json: true)
        XCTAssertEqual(json.status, 429)
        XCTAssertEqual(String(decoding: json.body, as: UTF8.self), #"{"error":"rate_limited","retry_after":3}"#)
        XCTAssertTrue(json.extraFields.contains { "\($0.name)" == "Retry-After" && $0.value == Array("3".utf8) })
        let plain = SignInRateLimit.tooManyRequests(retryAfter: 12, json: false)
        XCTAssertEqual(plain.status, 429)
        XCTAssertLessThan(plain.body.count, 100)
        XCTAssertTrue(plain.extraFields.contains { "\($0.name)" == "Retry-After" && $0.value == Array("12".utf8) })
    }

    func testTheLimitedEndpointsAreTheSignInOnes() {
        let limited: [AuthEndpoint] = [.login, .callback, .native, .nativeNonce, .nativeRefresh, .androidCallback, .revoke]
        let free: [AuthEndpoint] = [.logout, .me, .check, .jwks, .appleNotifications]
        XCTAssertTrue(limited.allSatisfy(\.isSignInRateLimited))
        XCTAssertFalse(free.contains(where: \.isSignInRateLimited))
    }
}
