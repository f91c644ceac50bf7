import Logging
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarStore
import XCTest

@testable import SidecarProxy

/// The web sign-in on its own: the state, nonce and PKCE verifier `login` seals into a cookie
/// named by the state, and the callback's checks of that state before Apple is ever asked.
final class WebSignInTests: XCTestCase {
    private struct Parts {
        let loop: EventLoop
        let metrics: MetricsRecorder
        let apple: AppleCalls
        let signIn: WebSignIn
        let settings: AuthSettings
    }

    private func makeParts() throws -> Parts {
        let shared = try AuthTestParts()
        return Parts(
            loop: shared.loop, metrics: shared.metrics, apple: shared.apple,
            signIn: WebSignIn(settings: shared.settings, apple: shared.apple, metrics: shared.metrics), settings: shared.settings)
    }

    private func request(_ line: String, cookies: [String] = [], body: String = "", api: Bool = false) throws -> EndpointRequest {
        let cookie = cookies.isEmpty ? "" : "Cookie: \(cookies.joined(separator: "; "))\r\n"
        let text = "\(line) HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\(cookie)Content-Length: \(body.utf8.count)\r\n\r\n"
        let head = try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8)))
        return EndpointRequest(head: head, body: Array(body.utf8), isAPIClient: api)
    }

    private func fields(_ answer: LocalResponse, _ name: String) -> [String] {
        answer.extraFields.filter { "\($0.name)" == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// The query of `Location` as name → value (percent-decoded).
    private func query(_ answer: LocalResponse) throws -> [String: String] {
        let location = try XCTUnwrap(fields(answer, "Location").first)
        let query = try XCTUnwrap(location.split(separator: "?", maxSplits: 1).last)
        let form = try XCTUnwrap(FormFields(Array(query.utf8)))
        var out: [String: String] = [:]
        for name in ["client_id", "redirect_uri", "response_type", "response_mode", "state", "nonce", "code_challenge",
                     "code_challenge_method"] {
            out[name] = form.single(name)
        }
        return out
    }

    /// The login cookie a login answer set: its name and value.
    private func loginCookie(_ answer: LocalResponse) throws -> (name: String, value: String) {
        let setCookie = try XCTUnwrap(fields(answer, "Set-Cookie").last)
        let pair = try XCTUnwrap(setCookie.split(separator: ";").first).split(separator: "=", maxSplits: 1)
        return (String(pair[0]), String(pair[1]))
    }

    private func callback(_ parts: Parts, _ request: EndpointRequest) throws -> LocalResponse {
        var answer: LocalResponse?
        parts.signIn.callback(request) { answer = $0 }
        return try XCTUnwrap(answer, "a refusal before Apple is asked answers at once")
    }

    private func reason(_ answer: LocalResponse) -> String {
        let body = String(decoding: answer.body, as: UTF8.self)
        guard let range = body.range(of: #""reason":""#) else { return body }
        return String(body[range.upperBound...].prefix { $0 != "\"" })
    }

    func testLoginSealsStateNonceAndVerifierIntoACookieNamedByTheState() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let answer = parts.signIn.login(try request("GET /.auth/login?rd=%2Fdocs%3Fx%3D1"))
        XCTAssertEqual(answer.status, 302)
        let query = try query(answer)
        XCTAssertEqual(query["client_id"], "com.example.web")
        XCTAssertEqual(query["response_mode"], "form_post")
        XCTAssertEqual(query["code_challenge_method"], "S256")
        let state = try XCTUnwrap(query["state"])
        let cookie = try loginCookie(answer)
        XCTAssertEqual(cookie.name, parts.settings.loginCookieName(forState: state))
        XCTAssertTrue(cookie.name.hasPrefix(parts.settings.loginCookiePrefix))
        let login = try parts.settings.loginStates.open(
            Array(cookie.value.utf8), context: cookie.name + parts.settings.realms.all[0].loginContextSuffix,
            now: UnixTime.now()
        ).payload
        XCTAssertEqual(login.state, state)
        XCTAssertEqual(query["nonce"], WebSignIn.nonceHash(login.nonce), "Apple gets the nonce's hash")
        let verifier = try XCTUnwrap(login.codeVerifier)
        XCTAssertEqual(query["code_challenge"], Base64URL.encode(SHA256.hash(Array(verifier.utf8))))
        XCTAssertEqual(login.redirectTarget, "/docs?x=1")
        XCTAssertEqual(login.expiresAt - login.createdAt, AuthSettings.loginStateSeconds)
    }

    func testEachLoginHasItsOwnStateAndAnUnsafeReturnAddressBecomesTheRoot() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let first = parts.signIn.login(try request("GET /.auth/login?rd=https%3A%2F%2Fevil.example%2F"))
        let second = parts.signIn.login(try request("GET /.auth/login"))
        XCTAssertNotEqual(try query(first)["state"], try query(second)["state"])
        XCTAssertNotEqual(try loginCookie(first).name, try loginCookie(second).name)
        let cookie = try loginCookie(first)
        let login = try parts.settings.loginStates.open(
            Array(cookie.value.utf8), context: cookie.name, now: UnixTime.now()
        ).payload
        XCTAssertEqual(login.redirectTarget, "/")
    }

    func testAbandonedLoginCookiesAreAllClearedAtTheLimit() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let prefix = parts.settings.loginCookiePrefix
        let few = (0..<(AuthSettings.maximumLoginCookies - 1)).map { "\(prefix)00000000000\($0)=x" }
        XCTAssertEqual(fields(parts.signIn.login(try request("GET /.auth/login", cookies: few)), "Set-Cookie").count, 1)
        let many = few + ["\(prefix)ffffffffffff=x"]
        let cleared = fields(parts.signIn.login(try request("GET /.auth/login", cookies: many)), "Set-Cookie")
        XCTAssertEqual(cleared.count, AuthSettings.maximumLoginCookies + 1)
        XCTAssertEqual(cleared.filter { $0.contains("Max-Age=0") }.count, AuthSettings.maximumLoginCookies)
    }

    func testTheCallbackRefusesAStateWithoutItsCookieOrSealedForAnother() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let login = parts.signIn.login(try request("GET /.auth/login"))
        let state = try XCTUnwrap(try query(login)["state"])
        let cookie = try loginCookie(login)

        XCTAssertEqual(reason(try callback(parts, try request("POST /.auth/callback", body: "code=c", api: true))), "state_missing")
        XCTAssertEqual(
            reason(try callback(parts, try request("POST /.auth/callback", body: "state=\(state)&code=c", api: true))),
            "state_missing")
        // Another login's cookie is there, not this state's.
        let other = try request("POST /.auth/callback", cookies: ["\(cookie.name)=\(cookie.value)"], body: "state=abc&code=c", api: true)
        XCTAssertEqual(reason(try callback(parts, other)), "state_mismatch")
        // This state's cookie name, the other login's sealed value.
        let swapped = try request(
            "POST /.auth/callback", cookies: ["\(parts.settings.loginCookieName(forState: "abc"))=\(cookie.value)"],
            body: "state=abc&code=c", api: true)
        XCTAssertEqual(reason(try callback(parts, swapped)), "state_invalid")
        let twice = try request(
            "POST /.auth/callback", cookies: ["\(cookie.name)=\(cookie.value)"], body: "state=\(state)&state=\(state)", api: true)
        XCTAssertEqual(reason(try callback(parts, twice)), "form_invalid")
        XCTAssertEqual(parts.metrics.metrics.logins[LoginOutcome.index(of: "state_missing")], 2)
    }

    func testAnExpiredStateACancelAndAReplayAreRefusedAndClearTheLoginCookie() throws {
        let parts = try makeParts()
        defer { parts.apple.stop() }
        let settings = parts.settings
        let now = UnixTime.now()
        let expired = LoginState(
            state: "old", nonce: "n", codeVerifier: nil, redirectTarget: "/", createdAt: now - 700, expiresAt: now - 100)
        let expiredName = settings.loginCookieName(forState: "old")
        let expiredValue = try settings.loginStates.seal(expired, context: expiredName)
        let late = try callback(parts, try request(
            "POST /.auth/callback", cookies: ["\(expiredName)=\(expiredValue)"], body: "state=old&code=c", api: true))
        XCTAssertEqual(reason(late), "state_expired")
        XCTAssertTrue(fields(late, "Set-Cookie").contains { $0.hasPrefix("\(expiredName)=;") && $0.contains("Max-Age=0") })

        let login = parts.signIn.login(try request("GET /.auth/login"))
        let state = try XCTUnwrap(try query(login)["state"])
        let cookie = try loginCookie(login)
        let cancelled = try callback(parts, try request(
            "POST /.auth/callback", cookies: ["\(cookie.name)=\(cookie.value)"],
            body: "state=\(state)&error=user_cancelled_authorize", api: true))
        XCTAssertEqual(cancelled.status, 401)
        XCTAssertEqual(reason(cancelled), "apple_cancelled")
        XCTAssertTrue(fields(cancelled, "Set-Cookie").contains { $0.hasPrefix("\(cookie.name)=;") })

        // Spent elsewhere (another replica's callback): refused before Apple is asked.
        var claimed: ClaimResult?
        let key = SHA256.hash(Array(state.utf8))
        settings.shared.claimOnce(.loginState, key, until: now + 600) { claimed = $0 }
        XCTAssertEqual(claimed, .claimed)
        let replay = try callback(parts, try request(
            "POST /.auth/callback", cookies: ["\(cookie.name)=\(cookie.value)"], body: "state=\(state)&code=c", api: true))
        XCTAssertEqual(reason(replay), "state_replayed")
        XCTAssertEqual(parts.metrics.metrics.logins[LoginOutcome.index(of: "state_replayed")], 1)
    }
}
