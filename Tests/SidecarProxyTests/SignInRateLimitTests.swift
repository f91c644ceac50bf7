import Logging
import SidecarCrypto
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// A worker's `limits.sign_in_rate` on its own: which requests count, against the buckets
/// every worker shares, and the 429 it answers.
final class SignInRateLimitTests: XCTestCase {
    private let second: Int64 = 1_000_000
    private let peer = Array("192.0.2.1".utf8)

    private func settings(rate: String, burst: Int, shared: AuthShared = AuthShared()) throws -> AuthSettings {
        let config = try AuthTestConfig.parse(
            secret: Base64.encode([UInt8](repeating: 0x11, count: 32)), extra: "limits:\n  sign_in_rate: \(rate)\n  sign_in_burst: \(burst)\n")
        return try AuthSettings(config: config, shared: shared)
    }

    private func head(_ path: String) throws -> HTTPRequestHead {
        try XCTUnwrap(try HTTPRequestHead.parse(Array("GET \(path) HTTP/1.1\r\nHost: a\r\n\r\n".utf8)))
    }

    private func refusal(
        _ limit: inout SignInRateLimit, _ endpoint: AuthEndpoint = .login, peer: [UInt8]? = nil, at now: Int64,
        apiClient: Bool = false
    ) throws -> LocalResponse? {
        limit.refusal(
            endpoint, try head("/.auth/login"), peer: peer ?? self.peer, peerTrusted: false, apiClient: apiClient,
            nowMicros: now)
    }

    func testTheBurstPassesThenA429WithRetryAfterUntilATokenIsBack() throws {
        var limit = SignInRateLimit(settings: try settings(rate: "1/s", burst: 2), logger: Logger(label: "test"))
        XCTAssertNil(try refusal(&limit, at: 0))
        XCTAssertNil(try refusal(&limit, at: 0))
        let refused = try XCTUnwrap(try refusal(&limit, at: 0))
        XCTAssertEqual(refused.status, 429)
        XCTAssertTrue(refused.extraFields.contains { "\($0.name)" == "Retry-After" && $0.value == Array("1".utf8) })
        XCTAssertEqual("\(refused.contentType)", "text/plain; charset=utf-8")
        XCTAssertNil(try refusal(&limit, at: second), "one token back after a second")
        XCTAssertNotNil(try refusal(&limit, at: second))
    }

    func testNativeEndpointsAndAPIClientsAreRefusedInJSON() throws {
        var limit = SignInRateLimit(settings: try settings(rate: "1/h", burst: 1), logger: Logger(label: "test"))
        XCTAssertNil(try refusal(&limit, .native, at: 0))
        XCTAssertEqual(try refusal(&limit, .native, at: 0).map { "\($0.contentType)" }, "application/json")
        XCTAssertEqual(try refusal(&limit, .login, at: 0, apiClient: true).map { "\($0.contentType)" }, "application/json")
        XCTAssertEqual(try refusal(&limit, .login, at: 0).map { "\($0.contentType)" }, "text/plain; charset=utf-8")
    }

    func testUnlimitedEndpointsAndAddresslessPeersAreNeverCounted() throws {
        var limit = SignInRateLimit(settings: try settings(rate: "1/h", burst: 1), logger: Logger(label: "test"))
        for _ in 0..<10 {
            XCTAssertNil(try refusal(&limit, .me, at: 0))
            XCTAssertNil(try refusal(&limit, .logout, at: 0))
            XCTAssertNil(try refusal(&limit, .login, peer: [], at: 0), "a Unix-socket peer has no address")
        }
        XCTAssertNil(try refusal(&limit, .login, at: 0), "the address's one token is still there")
        XCTAssertNotNil(try refusal(&limit, .login, at: 0))
    }

    func testZeroDisablesTheLimit() throws {
        var limit = SignInRateLimit(settings: try settings(rate: "0", burst: 1), logger: Logger(label: "test"))
        for _ in 0..<50 { XCTAssertNil(try refusal(&limit, at: 0)) }
    }

    func testTheBucketsAreSharedByEveryWorkerAndKeptAcrossAReload() throws {
        let shared = AuthShared()
        var first = SignInRateLimit(settings: try settings(rate: "1/h", burst: 2, shared: shared), logger: Logger(label: "a"))
        var second = SignInRateLimit(settings: try settings(rate: "1/h", burst: 2, shared: shared), logger: Logger(label: "b"))
        XCTAssertNil(try refusal(&first, at: 0))
        XCTAssertNil(try refusal(&second, at: 0))
        XCTAssertNotNil(try refusal(&first, at: 0), "the other worker spent the second token")
        second.apply(try settings(rate: "1/h", burst: 2, shared: shared))
        XCTAssertNotNil(try refusal(&second, at: 0), "a reload keeps the buckets")
        second.apply(try settings(rate: "0", burst: 2, shared: shared))
        XCTAssertNil(try refusal(&second, at: 0), "and takes the new rate")
    }
}
