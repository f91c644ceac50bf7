import SidecarApple
import XCTest

/// Pure parts: base URL rules, form encoding, JSON parsing of Apple's answers.
final class AppleClientValueTests: XCTestCase {
    func testEndpointParsing() throws {
        let apple = try AppleEndpoint(baseURL: "https://appleid.apple.com")
        XCTAssertEqual(apple.scheme, .https)
        XCTAssertEqual(apple.host, "appleid.apple.com")
        XCTAssertEqual(apple.port, 443)
        XCTAssertEqual(apple.basePath, "")
        XCTAssertFalse(apple.isLoopback)
        XCTAssertFalse(apple.isIPLiteral)

        let local = try AppleEndpoint(baseURL: "http://[::1]:8443/emu/")
        XCTAssertEqual(local.host, "::1")
        XCTAssertEqual(local.port, 8443)
        XCTAssertEqual(local.basePath, "/emu")
        XCTAssertTrue(local.isLoopback)
        XCTAssertTrue(local.isIPLiteral)
        XCTAssertTrue(try AppleEndpoint(baseURL: "http://127.8.9.10:1").isLoopback)
        XCTAssertTrue(try AppleEndpoint(baseURL: "http://LOCALHOST:1").isLoopback)
    }

    func testEndpointRejections() {
        func error(_ url: String) -> AppleEndpoint.ParseError? {
            do { _ = try AppleEndpoint(baseURL: url); return nil } catch { return error }
        }
        XCTAssertEqual(error("http://appleid.apple.com"), .plainHTTPToNonLoopbackHost)
        XCTAssertEqual(error("http://128.0.0.1"), .plainHTTPToNonLoopbackHost)
        XCTAssertEqual(error("ftp://x"), .unsupportedScheme)
        XCTAssertEqual(error("https://"), .missingHost)
        XCTAssertEqual(error("https://host:0"), .invalidPort)
        XCTAssertEqual(error("https://host:65536"), .invalidPort)
        XCTAssertEqual(error("https://host:+1"), .invalidPort)
        XCTAssertEqual(error("https://user@host"), .invalidCharacters)
        XCTAssertEqual(error("https://host/a b"), .invalidCharacters)
        XCTAssertEqual(error("https://host\r\nX: y"), .invalidCharacters)
        XCTAssertEqual(error("https://[nope]"), .missingHost)
    }

    func testFormEncodingEscapesEveryReservedByte() {
        let body = FormEncoding.encode([("a b", "+&=%"), ("k", "-._~AZaz09"), ("ü", "\u{0}\n")])
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "a%20b=%2B%26%3D%25&k=-._~AZaz09&%C3%BC=%00%0A")
    }

    func testTokenResponseParsing() throws {
        let json = #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","id_token":"i"}"#
        let token = try XCTUnwrap(TokenResponse(json: Array(json.utf8)))
        XCTAssertEqual(token, TokenResponse(accessToken: "a", tokenType: "Bearer", expiresIn: 3600, refreshToken: "r", idToken: "i"))
        XCTAssertTrue(token.isBearer)
        XCTAssertTrue(TokenResponse(tokenType: "BEARER").isBearer)
        XCTAssertFalse(TokenResponse(tokenType: "mac").isBearer)

        let odd = try XCTUnwrap(TokenResponse(json: Array(#"{"expires_in":"3600","id_token":5,"token_type":"bearer"}"#.utf8)))
        XCTAssertNil(odd.expiresIn)
        XCTAssertNil(odd.idToken)
        XCTAssertNil(TokenResponse(json: Array(#"{"expires_in":1.5}"#.utf8))?.expiresIn)
        XCTAssertNil(TokenResponse(json: Array("[]".utf8)))
        XCTAssertNil(TokenResponse(json: Array("not json".utf8)))
        XCTAssertNil(TokenResponse(json: []))
    }

    func testAppleErrorCodes() {
        XCTAssertEqual(AppleErrorCode("invalid_grant"), .invalidGrant)
        XCTAssertEqual(AppleErrorCode("invalid_client"), .invalidClient)
        XCTAssertEqual(AppleErrorCode("invalid_request"), .invalidRequest)
        XCTAssertEqual(AppleErrorCode("unauthorized_client"), .unauthorizedClient)
        XCTAssertEqual(AppleErrorCode("unsupported_grant_type"), .unsupportedGrantType)
        XCTAssertEqual(AppleErrorCode("invalid_scope"), .invalidScope)
        XCTAssertEqual(AppleErrorCode("rate_limited"), .other("rate_limited"))
        XCTAssertEqual(AppleError.rejected(.other("we\nird"), description: nil, status: 400).reason, "apple_weird")
        XCTAssertEqual(AppleError.appleServerError(status: 502).reason, "apple_server_error_502")
        XCTAssertTrue(AppleError.transport(.timeout).isTimeout)
    }
}
