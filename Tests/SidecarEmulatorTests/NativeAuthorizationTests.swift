import XCTest
import SidecarApple
import SidecarCrypto

/// `POST /emulator/native`: identity tokens and codes for a bundle id, as a device gets them,
/// and the token endpoint's rules for such codes (APPLE.md "Native apps").
final class NativeAuthorizationTests: XCTestCase {
    private func credential(_ emulator: EmulatorFixture, _ json: String) throws -> [String: JSONValue] {
        let reply = try emulator.postJSON("/emulator/native", json)
        XCTAssertEqual(reply.status, 200, reply.text)
        return try XCTUnwrap(reply.json?.objectValue)
    }

    func testIdentityTokenAndCodeForABundleID() throws {
        let emulator = try EmulatorFixture()
        let first = try credential(emulator, #"{"client_id":"com.example.app","email":"maria.ruiz@example.com","nonce":"n-1"}"#)
        let token = try XCTUnwrap(first["identityToken"]?.stringValue)
        let identity = try emulator.verify(token, nonce: .oneOf(["n-1"]), audience: EmulatorFixture.nativeClient)
        XCTAssertEqual(identity.audience, EmulatorFixture.nativeClient)
        XCTAssertEqual(identity.email, "maria.ruiz@example.com")
        XCTAssertEqual(identity.realUserStatus, 2)
        XCTAssertEqual(first["user"]?.stringValue, identity.subject)
        XCTAssertEqual(first["email"]?.stringValue, "maria.ruiz@example.com")
        XCTAssertEqual(first["fullName"], .object(["givenName": .string("Maria"), "familyName": .string("Ruiz")]))
        // The second authorization of the same app: no email, no name (as on a device).
        let second = try credential(emulator, #"{"client_id":"com.example.app","email":"maria.ruiz@example.com"}"#)
        XCTAssertEqual(second["email"], .null)
        XCTAssertEqual(second["fullName"], .null)
        XCTAssertEqual(second["user"], first["user"])

        // The code: client_id = the bundle id (secret sub = bundle id), no redirect_uri.
        let code = try XCTUnwrap(first["authorizationCode"]?.stringValue)
        let exchanged = try emulator.exchange(code: code, client: EmulatorFixture.nativeClient, redirect: nil)
        XCTAssertEqual(exchanged.status, 200, exchanged.text)
        let idToken = try XCTUnwrap(exchanged.json?.objectValue?["id_token"]?.stringValue)
        XCTAssertEqual(try emulator.verify(idToken, nonce: .none, audience: EmulatorFixture.nativeClient).subject,
                       identity.subject)
        XCTAssertNotNil(exchanged.json?.objectValue?["refresh_token"]?.stringValue)

        let log = try XCTUnwrap(try emulator.get("/emulator/token-requests").json)
        XCTAssertEqual(log, .array([.object([
            "grant_type": .string("authorization_code"), "client_id": .string(EmulatorFixture.nativeClient),
            "client_authenticated": .bool(true),
            "fields": .array(["client_id", "client_secret", "code", "grant_type"].map { .string($0) }),
        ])]))
    }

    func testANativeCodeRefusesWebStyleExchanges() throws {
        let emulator = try EmulatorFixture()
        let code = { () throws -> String in
            try XCTUnwrap(try self.credential(emulator, #"{"client_id":"com.example.app"}"#)["authorizationCode"]?.stringValue)
        }
        // With a redirect_uri, for another client, or with a secret for another client: refused.
        XCTAssertEqual(try emulator.exchange(code: try code(), client: EmulatorFixture.nativeClient).error, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: try code(), client: EmulatorFixture.webClient, redirect: nil).error,
                       "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: try code(), client: EmulatorFixture.nativeClient, redirect: nil,
                                             secret: try emulator.secret(client: EmulatorFixture.webClient)).error,
                       "invalid_client")
        let log = try XCTUnwrap(try emulator.get("/emulator/token-requests").json)
        guard case .array(let entries) = log else { return XCTFail("not an array") }
        XCTAssertEqual(entries.last?.objectValue?["client_authenticated"], .bool(false))
        XCTAssertEqual(entries.first?.objectValue?["redirect_uri"], .string(EmulatorFixture.redirect))
    }

    func testFaultsSpoilTheIdentityTokenAndBadRequestsAreRefused() throws {
        let emulator = try EmulatorFixture()
        let spoiled = try credential(emulator, #"{"client_id":"com.example.app","fault":"wrong_aud"}"#)
        XCTAssertThrowsError(try emulator.verify(try XCTUnwrap(spoiled["identityToken"]?.stringValue), nonce: .none,
                                                 audience: EmulatorFixture.nativeClient)) {
            XCTAssertEqual($0 as? JWTError, .wrongAudience)
        }
        for body in [#"{"client_id":"com.unknown.app"}"#, #"{}"#, #"[]"#, #"{"client_id":"com.example.app","fault":"http_500"}"#,
                     #"{"client_id":"com.example.app","fault":"nope"}"#, #"{"client_id":"com.example.app","nonce":5}"#,
                     #"{"client_id":"com.example.app","email":"not an email"}"#,
                     #"{"client_id":"com.example.app","scopes":["openid"]}"#] {
            XCTAssertEqual(try emulator.postJSON("/emulator/native", body).status, 400, body)
        }
        let nameOnly = try credential(emulator, #"{"client_id":"com.example.app","email":"x@example.com","scopes":["name"]}"#)
        let claims = try JWSVerifier(allowedAlgorithms: [.rs256])
            .verify(try XCTUnwrap(nameOnly["identityToken"]?.stringValue), keys: try emulator.keys()).claims
        XCTAssertNil(claims["email"])
        XCTAssertEqual(nameOnly["email"], .null)
    }
}
