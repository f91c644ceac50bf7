import SidecarCrypto
import SidecarEvent
import XCTest

@testable import SidecarApple

/// The account-lifecycle controls: consent revocation by email or sub, the
/// revocation log, and the token-endpoint faults revalidation is tested against.
final class LifecycleControlTests: XCTestCase {
    private func signIn(_ emulator: EmulatorFixture) throws -> String {
        let tokens = try emulator.exchange(code: try XCTUnwrap(try emulator.authorize()["code"])).json?.objectValue
        return try XCTUnwrap(tokens?["refresh_token"]?.stringValue)
    }

    private func refreshGrant(_ emulator: EmulatorFixture, _ token: String) throws -> HTTPReply {
        try emulator.postForm("/auth/token", [("grant_type", "refresh_token"), ("refresh_token", token),
            ("client_id", EmulatorFixture.webClient), ("client_secret", try emulator.secret())])
    }

    func testRevokeConsentByEmailMakesRefreshFailWithInvalidGrant() throws {
        let emulator = try EmulatorFixture()
        let refresh = try signIn(emulator)
        XCTAssertEqual(try refreshGrant(emulator, refresh).status, 200)
        let reply = try emulator.postJSON("/emulator/revoke-consent", #"{"email":"maria@example.com"}"#)
        XCTAssertEqual(reply.status, 200, reply.text)
        XCTAssertEqual(reply.json?.objectValue?["revoked_tokens"], .integer(1))
        XCTAssertEqual(reply.json?.objectValue?["sub"]?.stringValue,
                       AppleIdentifiers.subject(teamID: EmulatorFixture.teamID, email: "maria@example.com"))
        XCTAssertEqual(try refreshGrant(emulator, refresh).error, "invalid_grant")
        XCTAssertEqual(try emulator.postJSON("/emulator/revoke-consent", #"{"email":"maria@example.com"}"#)
            .json?.objectValue?["revoked_tokens"], .integer(0))
        XCTAssertEqual(try emulator.postJSON("/emulator/revoke-consent", #"{}"#).status, 400)
        XCTAssertEqual(try emulator.postJSON("/emulator/revoke-consent", #"{"sub":"x","client_id":"com.nope"}"#).status, 400)
    }

    /// `/auth/revoke` really ends the token: a refresh with it fails as at Apple, and the
    /// control API no longer counts it among the user's grants.
    func testARevokedRefreshTokenNoLongerRefreshesAndItsGrantIsGone() throws {
        let emulator = try EmulatorFixture()
        let refresh = try signIn(emulator)
        let user = #"{"email":"maria@example.com"}"#
        var grants = try emulator.postJSON("/emulator/grants", user)
        XCTAssertEqual(grants.status, 200, grants.text)
        XCTAssertEqual(grants.json?.objectValue?["grants"], .array([.object([
            "client_id": .string(EmulatorFixture.webClient), "refresh_tokens": .integer(1)])]))
        XCTAssertFalse(grants.text.contains(refresh))
        XCTAssertEqual(try refreshGrant(emulator, refresh).status, 200)
        XCTAssertEqual(try emulator.postForm("/auth/revoke", [("client_id", EmulatorFixture.webClient),
            ("client_secret", try emulator.secret()), ("token", refresh), ("token_type_hint", "refresh_token")]).status, 200)
        XCTAssertEqual(try refreshGrant(emulator, refresh).error, "invalid_grant")
        grants = try emulator.postJSON("/emulator/grants", user)
        XCTAssertEqual(grants.json?.objectValue?["grants"], .array([]))
        XCTAssertEqual(try emulator.postJSON("/emulator/grants", "{}").status, 400)
    }

    func testRevocationLogShowsClientHintAndWhetherTheTokenWasKnownNeverTheToken() throws {
        let emulator = try EmulatorFixture()
        let refresh = try signIn(emulator)
        for token in [refresh, "r-unknown"] {
            XCTAssertEqual(try emulator.postForm("/auth/revoke", [("client_id", EmulatorFixture.webClient),
                ("client_secret", try emulator.secret()), ("token", token), ("token_type_hint", "refresh_token")]).status, 200)
        }
        XCTAssertEqual(try emulator.postForm("/auth/revoke", [("client_id", EmulatorFixture.webClient),
            ("client_secret", "bad"), ("token", refresh)]).status, 400)
        let log = try emulator.get("/emulator/revocations")
        XCTAssertFalse(log.text.contains(refresh))
        let entries = try XCTUnwrap(log.json.flatMap { if case .array(let a) = $0 { a } else { nil } })
        XCTAssertEqual(entries.count, 3)
        XCTAssertEqual(entries[0].objectValue?["client_id"]?.stringValue, EmulatorFixture.webClient)
        XCTAssertEqual(entries[0].objectValue?["token_type_hint"]?.stringValue, "refresh_token")
        XCTAssertEqual(entries[0].objectValue?["token_known"], .bool(true))
        XCTAssertEqual(entries[1].objectValue?["token_known"], .bool(false))
        XCTAssertEqual(entries[2].objectValue?["client_authenticated"], .bool(false))
        XCTAssertEqual(entries[2].objectValue?["error"]?.stringValue, "invalid_client")
    }

    func testLifecycleFaults() throws {
        let emulator = try EmulatorFixture()
        let refresh = try signIn(emulator)
        XCTAssertEqual(try emulator.postJSON("/emulator/faults",
            #"{"faults":["invalid_request","http_502_html","malformed_json"]}"#).status, 200)
        XCTAssertEqual(try refreshGrant(emulator, refresh).error, "invalid_request")
        let html = try refreshGrant(emulator, refresh)
        XCTAssertEqual(html.status, 502)
        XCTAssertTrue(html.text.contains("<html>"))
        let malformed = try refreshGrant(emulator, refresh)
        XCTAssertEqual(malformed.status, 200)
        XCTAssertNil(malformed.json)
        XCTAssertEqual(try refreshGrant(emulator, refresh).status, 200, "one fault per request")
    }

    func testPushTargets() {
        XCTAssertEqual(AppleEmulator.pushTarget("http://127.0.0.1:8080/.auth/apple/notifications")?.path,
                       "/.auth/apple/notifications")
        XCTAssertEqual(AppleEmulator.pushTarget("https://app.example.com")?.path, "/")
        XCTAssertEqual(AppleEmulator.pushTarget("http://h:1/p?q=1")?.path, "/p?q=1")
        XCTAssertEqual(AppleEmulator.pushTarget("http://h:1/p?q=1")?.endpoint.port, 1)
        XCTAssertNil(AppleEmulator.pushTarget("ftp://h/p"))
        XCTAssertNil(AppleEmulator.pushTarget("http://h/p#frag"))
        XCTAssertNil(AppleEmulator.pushTarget("not a url"))
    }
}
