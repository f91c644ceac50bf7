import Logging
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `SessionEndpoints` over a real `SessionReader` and memory store: `/me` answers the session,
/// a cross-site GET cannot sign anyone out, and a logout ends the session for every later
/// request that presents the same cookie.
final class SessionEndpointsTests: XCTestCase {
    private struct Parts {
        let loop: EventLoop
        let apple: AppleCalls
        let sessions: SessionReader
        let endpoints: SessionEndpoints
        let settings: AuthSettings
    }

    private func makeParts() throws -> Parts {
        let shared = try AuthTestParts()
        return Parts(
            loop: shared.loop, apple: shared.apple, sessions: shared.sessions,
            endpoints: SessionEndpoints(settings: shared.settings, sessions: shared.sessions, apple: shared.apple),
            settings: shared.settings)
    }

    private func cookie(_ parts: Parts) throws -> String {
        let now = UnixTime.now()
        let session = Session(
            id: [UInt8](repeating: 5, count: 16), subject: "001234.web", email: "a@example.com", emailVerified: true,
            privateEmail: false, name: "Ann", issuedAt: now - 10, expiresAt: now + 86_400, idleDeadline: now + 3_600,
            lastRevalidation: now, appleRefreshToken: nil)
        let value = try parts.settings.sessions.sealSession(session, cookieName: parts.settings.realms.all[0].sessionContext)
        return "\(parts.settings.cookieName)=\(value)"
    }

    private func request(_ line: String, cookie: String, fields: String = "") throws -> EndpointRequest {
        let text = "\(line) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nCookie: \(cookie)\r\n\(fields)\r\n"
        return EndpointRequest(head: try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8))), body: [], isAPIClient: true)
    }

    private func body(_ answer: LocalResponse) -> String { String(decoding: answer.body, as: UTF8.self) }

    func testMeAnswersTheSessionAndACrossSiteGetCannotSignOut() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let cookie = try cookie(parts)
        let me = parts.endpoints.me(try request("GET /.auth/me", cookie: cookie))
        XCTAssertEqual(me.status, 200)
        XCTAssertTrue(body(me).contains(#""id":"001234.web""#), body(me))
        XCTAssertEqual(me.userID, "001234.web")

        let crossSite = parts.endpoints.logout(
            try request("GET /.auth/logout", cookie: cookie, fields: "Sec-Fetch-Site: cross-site\r\n")) { _ in
            XCTFail("a refused logout answers at once")
        }
        guard case .now(let refused) = crossSite else { return XCTFail("answered later") }
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(body(refused), #"{"error":"cross_site"}"#)
        XCTAssertEqual(parts.endpoints.me(try request("GET /.auth/me", cookie: cookie)).status, 200, "still signed in")
    }

    func testALogoutEndsTheSessionForEveryCopyOfTheCookie() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let cookie = try cookie(parts)
        var answer: LocalResponse?
        let started = parts.endpoints.logout(try request("POST /.auth/logout", cookie: cookie)) { answer = $0 }
        guard case .later = started else { return XCTFail("a logout waits for the store") }
        let signedOut = try XCTUnwrap(answer, "the memory store answers at once")
        XCTAssertEqual(signedOut.status, 204)
        XCTAssertEqual(signedOut.userID, "001234.web")
        let cleared = signedOut.extraFields.filter { "\($0.name)" == "Set-Cookie" }.map { String(decoding: $0.value, as: UTF8.self) }
        XCTAssertTrue(cleared.contains { $0.hasPrefix("\(parts.settings.cookieName)=;") && $0.contains("Max-Age=0") }, "\(cleared)")

        let me = parts.endpoints.me(try request("GET /.auth/me", cookie: cookie))
        XCTAssertEqual(me.status, 401)
        XCTAssertTrue(me.extraFields.contains { "\($0.name)" == "WWW-Authenticate" })
        var identity = RequestIdentity()
        parts.sessions.identify(try request("GET /", cookie: cookie).head, into: &identity)
        XCTAssertNil(identity.opened)
        XCTAssertEqual(identity.refusal, .revoked)
    }
}
