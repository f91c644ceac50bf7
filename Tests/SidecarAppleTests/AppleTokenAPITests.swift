import Foundation
import SidecarApple
import XCTest

/// Token, revoke and keys calls against the local server's stand-in endpoints.
final class AppleTokenAPITests: XCTestCase {
    private var loop: TestLoop!
    private var api: AppleTokenAPI!

    override func setUpWithError() throws {
        let servers = try TestServers.get()
        loop = TestLoop()
        api = AppleTokenAPI(client: try makeClient(
            loop, "https://localhost:\(servers.port("good"))/apple", caFile: servers.caFile))
    }

    override func tearDown() {
        api = nil
        loop = nil
    }

    private func exchange(_ code: String, secret: String = "secret", redirectURI: String? = nil, verifier: String? = nil) -> Result<TokenResponse, AppleError>? {
        var result: Result<TokenResponse, AppleError>?
        api.exchangeCode(code: code, redirectURI: redirectURI, codeVerifier: verifier, clientID: "com.example.web",
                         clientSecret: secret) { result = $0 }
        loop.drive(until: { result != nil })
        return result
    }

    private func exchangeError(_ code: String, secret: String = "secret") -> AppleError? {
        guard case .failure(let error)? = exchange(code, secret: secret) else { return nil }
        return error
    }

    func testCodeExchangeParsesTheTokenResponse() throws {
        let token = try XCTUnwrap(exchange("c1", redirectURI: "https://app.example/.auth/callback", verifier: "v 1")).get()
        XCTAssertEqual(token.accessToken, "at.c1")
        XCTAssertEqual(token.idToken, "id.c1")
        XCTAssertEqual(token.refreshToken, "rt.c1")
        XCTAssertEqual(token.expiresIn, 3600)
        XCTAssertEqual(token.tokenType, "bEaReR")
        XCTAssertTrue(token.isBearer)
    }

    func testRefreshReturnsNoNewRefreshToken() throws {
        var result: Result<TokenResponse, AppleError>?
        api.refresh(refreshToken: "rt.1", clientID: "com.example.web", clientSecret: "secret") { result = $0 }
        loop.drive(until: { result != nil })
        let token = try XCTUnwrap(result?.get())
        XCTAssertEqual(token.accessToken, "at.rt.1")
        XCTAssertNil(token.refreshToken)
    }

    func testInvalidGrantIsATypedRejection() {
        XCTAssertEqual(exchangeError("used"), .rejected(
            .invalidGrant, description: "The code has already been used.", status: 400))
    }

    func testInvalidClient() {
        XCTAssertEqual(exchangeError("c1", secret: "wrong"), .rejected(.invalidClient, description: nil, status: 400))
        XCTAssertEqual(exchangeError("c1", secret: "wrong")?.reason, "apple_invalid_client")
    }

    func testServerErrorAndUnparseable4xx() {
        XCTAssertEqual(exchangeError("server-error"), .appleServerError(status: 503))
        XCTAssertEqual(exchangeError("html-400"), .appleServerError(status: 400))
        XCTAssertEqual(exchangeError("not-json"), .invalidResponse(status: 200))
    }

    func testRevoke() {
        var result: Result<Void, AppleError>?
        api.revoke(token: "rt.1", hint: .refreshToken, clientID: "com.example.web", clientSecret: "secret") { result = $0 }
        loop.drive(until: { result != nil })
        XCTAssertNoThrow(try result?.get())

        result = nil
        api.revoke(token: "rt.1", hint: .refreshToken, clientID: "com.example.web", clientSecret: "bad") { result = $0 }
        loop.drive(until: { result != nil })
        XCTAssertThrowsError(try result?.get()) { error in
            XCTAssertEqual(error as? AppleError, .rejected(.invalidClient, description: nil, status: 400))
        }
    }

    func testFetchJWKSReturnsRawBytes() throws {
        var result: Result<AppleHTTPResponse, AppleError>?
        api.fetchJWKS { result = $0 }
        loop.drive(until: { result != nil })
        let response = try XCTUnwrap(result?.get())
        XCTAssertEqual(response.status, 200)
        XCTAssertTrue(String(decoding: response.body, as: UTF8.self).hasPrefix(#"{"keys":[{"kty":"RSA""#))
    }

    func testTransportFailureIsReported() throws {
        let servers = try TestServers.get()
        let other = AppleTokenAPI(client: try makeClient(
            loop, "https://localhost:\(servers.port("other"))", caFile: servers.caFile))
        var result: Result<AppleHTTPResponse, AppleError>?
        other.fetchJWKS { result = $0 }
        loop.drive(until: { result != nil })
        guard case .failure(let error)? = result else { return XCTFail("expected failure") }
        XCTAssertEqual(error, .transport(.tlsHandshakeFailed(verifyResult: 62)))
        XCTAssertEqual(error.reason, "tlsHandshakeFailed(verifyResult: 62)")
    }
}
