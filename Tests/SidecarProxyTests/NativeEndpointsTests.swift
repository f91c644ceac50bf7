import Foundation
import Logging
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `NativeSignIn`'s answers that need no Apple: the sealed nonce, the bearer refresh and
/// the endpoints' absence where no native app is configured.
final class NativeEndpointsTests: XCTestCase {
    private struct Parts {
        let loop: EventLoop
        let metrics: MetricsRecorder
        let apple: AppleCalls
        let sessions: SessionReader
        let native: NativeSignIn
        let settings: AuthSettings
    }

    private func makeParts(audiences: String = "[com.example.app]") throws -> Parts {
        let shared = try AuthTestParts(apple: ["native_audiences: \(audiences)"])
        let native = NativeSignIn(
            settings: shared.settings, sessions: shared.sessions, revalidator: shared.revalidator, apple: shared.apple,
            metrics: shared.metrics)
        return Parts(
            loop: shared.loop, metrics: shared.metrics, apple: shared.apple, sessions: shared.sessions, native: native,
            settings: shared.settings)
    }

    private func request(_ line: String, bearer: String? = nil) throws -> EndpointRequest {
        let authorization = bearer.map { "Authorization: Bearer \($0)\r\n" } ?? ""
        let text = "\(line) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\(authorization)\r\n"
        return EndpointRequest(head: try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8))), body: [], isAPIClient: true)
    }

    private func json(_ answer: LocalResponse) throws -> [String: JSONValue] {
        guard case .object(let fields) = try JSONDecoder().decode(JSONValue.self, from: Data(answer.body)) else {
            XCTFail("not a JSON object: \(String(decoding: answer.body, as: UTF8.self))")
            return [:]
        }
        return fields
    }

    func testTheNonceIsSealedByTheSidecarAndNamesItsClaim() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let answer = parts.native.nonce(try request("GET /.auth/native/nonce"))
        XCTAssertEqual(answer.status, 200)
        let fields = try json(answer)
        guard case .string(let nonce)? = fields["nonce"], case .integer(let expiresAt)? = fields["expires_at"] else {
            return XCTFail("\(fields)")
        }
        XCTAssertEqual(expiresAt - UnixTime.now(), AuthShared.nativeNonceSeconds, accuracy: 2)
        let checked = try NativeNonces.check(nonce, sealer: parts.settings.nativeNonces, now: UnixTime.now())
        XCTAssertEqual(checked.claim.until, expiresAt)
        XCTAssertEqual(checked.claim.key, SHA256.hash(Array(nonce.utf8)))
    }

    func testARefreshResealsTheBearerTokenWithALaterIdleDeadline() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let now = UnixTime.now()
        let session = Session(
            id: [UInt8](repeating: 3, count: 16), subject: "001234.native", email: "a@example.com", emailVerified: true,
            privateEmail: false, name: "Ann", issuedAt: now - 100, expiresAt: now + 30 * 86_400, idleDeadline: now + 600,
            lastRevalidation: now, appleRefreshToken: nil, appleClientID: "com.example.app")
        let token = try parts.settings.sessions.sealSession(session, cookieName: parts.settings.realms.all[0].sessionContext)
        let answer = parts.native.refresh(try request("POST /.auth/native/refresh", bearer: token))
        XCTAssertEqual(answer.status, 200)
        let fields = try json(answer)
        guard case .string(let renewed)? = fields["token"], case .integer(let expiresAt)? = fields["expires_at"] else {
            return XCTFail("\(fields)")
        }
        XCTAssertNotEqual(renewed, token)
        XCTAssertEqual(expiresAt - now, parts.settings.idleTimeout, accuracy: 2)
        XCTAssertEqual(fields["session_expires_at"], .integer(session.expiresAt))
        XCTAssertEqual(answer.userID, "001234.native")
        guard case .session(let opened) = parts.sessions.bearerSession(try request("GET /", bearer: renewed).head) else {
            return XCTFail("the new token opens")
        }
        XCTAssertEqual(opened.session.id, session.id)
        XCTAssertEqual(opened.session.appleClientID, "com.example.app")
    }

    func testARefreshWithoutAValidBearerTokenIs401WithItsReason() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let missing = parts.native.refresh(try request("POST /.auth/native/refresh"))
        XCTAssertEqual(missing.status, 401)
        XCTAssertEqual(try json(missing)["error"], .string("bearer_missing"))
        XCTAssertTrue(missing.extraFields.contains { "\($0.name)" == "WWW-Authenticate" })
        let forged = parts.native.refresh(try request("POST /.auth/native/refresh", bearer: "v1.forged"))
        XCTAssertEqual(forged.status, 401)
        guard case .string(let reason)? = try json(forged)["error"] else { return XCTFail("no reason") }
        XCTAssertTrue(reason.hasPrefix("session_"), reason)
    }

    func testWithoutNativeAudiencesTheEndpointsAre404() throws {
        let parts = try makeParts(audiences: "[]")
        defer { parts.apple.stop() }
        XCTAssertFalse(parts.native.isEnabled)
        XCTAssertEqual(parts.native.nonce(try request("GET /.auth/native/nonce")).status, 404)
        XCTAssertEqual(parts.native.refresh(try request("POST /.auth/native/refresh")).status, 404)
        XCTAssertEqual(parts.native.androidCallback(try request("POST /.auth/android/callback")).status, 404)
    }
}
