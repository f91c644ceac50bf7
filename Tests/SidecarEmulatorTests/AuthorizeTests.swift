import XCTest
import SidecarApple
import SidecarCrypto

final class AuthorizeTests: XCTestCase {
    private let base = "client_id=com.example.web&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback"

    func testValidationErrorsAreAppleShaped() throws {
        let emulator = try EmulatorFixture()
        let cases: [(String, String)] = [
            ("redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code", "invalid_request"),
            ("client_id=com.unknown&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code", "invalid_client"),
            ("client_id=com.example.app&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code", "unauthorized_client"),
            ("client_id=com.example.web&response_type=code", "invalid_request"),
            ("client_id=com.example.web&redirect_uri=https%3A%2F%2Fevil.example.com%2Fcb&response_type=code", "invalid_request"),
            ("client_id=com.example.web&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback%23frag&response_type=code", "invalid_request"),
            ("client_id=com.example.web&redirect_uri=https%3A%2F%2FAPP.example.com%2F.auth%2Fcallback&response_type=code", "invalid_request"),
            ("client_id=com.example.web&redirect_uri=https%3A%2F%2Fother.example.com%2Fcb&response_type=code", "invalid_request"),
            ("client_id=com.example.web&redirect_uri=http%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code", "invalid_request"),
            (base, "invalid_request"),
            (base + "&response_type=token", "invalid_request"),
            (base + "&response_type=code+id_token&response_mode=form_post", "invalid_request"),
            (base + "&response_type=code&scope=name%20email", "invalid_request"),
            (base + "&response_type=code&response_mode=query&scope=email", "invalid_request"),
            (base + "&response_type=code&response_mode=form_post&scope=name+email", "invalid_scope"),
            (base + "&response_type=code&response_mode=form_post&scope=openid", "invalid_scope"),
            (base + "&response_type=code&response_mode=form_post&scope=name%20%20email", "invalid_scope"),
            (base + "&response_type=code%20id_token&response_mode=query", "invalid_request"),
            (base + "&response_type=code&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=plain", "invalid_request"),
            (base + "&response_type=code&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "invalid_request"),
            (base + "&response_type=code&code_challenge=short&code_challenge_method=S256", "invalid_request"),
            (base + "&response_type=code&code_challenge_method=S256", "invalid_request"),
            (base + "&response_type=code&state=a&state=b", "invalid_request"),
            (base + "&response_type=code&state=%zz", "invalid_request"),
        ]
        for (query, expected) in cases {
            let reply = try emulator.get("/auth/authorize?" + query)
            XCTAssertEqual(reply.status, 400, query)
            XCTAssertEqual(reply.error, expected, query)
            XCTAssertTrue(reply.header("Content-Type")?.hasPrefix("application/json") == true, query)
        }
    }

    func testFormPostCarriesCodeStateAndUser() throws {
        let emulator = try EmulatorFixture()
        let fields = try emulator.authorize()
        XCTAssertEqual(fields["state"], "st4te")
        XCTAssertTrue(fields["code"]?.hasPrefix("c") == true)
        XCTAssertNil(fields["id_token"], "only code id_token carries an id_token")
        let user = try XCTUnwrap(fields["user"].flatMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) })
        XCTAssertEqual(user.objectValue?["email"]?.stringValue, "maria@example.com")
        XCTAssertEqual(user.objectValue?["name"]?.objectValue?["firstName"]?.stringValue, "Maria")
        XCTAssertEqual(user.objectValue?["name"]?.objectValue?["lastName"]?.stringValue, "Ruiz")
        let page = try emulator.get("/auth/authorize?" + base + "&response_type=code&response_mode=form_post&scope=email&state=x")
        XCTAssertTrue(page.text.contains("<form method=\"post\" action=\"https://app.example.com/.auth/callback\">"))
        XCTAssertTrue(page.text.contains("document.forms[0].submit()"))
        XCTAssertTrue(page.text.contains("<noscript>"))
    }

    func testUserIsSentOnlyOnFirstAuthorizationUntilTokensAreRevoked() throws {
        let emulator = try EmulatorFixture()
        let first = try emulator.authorize()
        XCTAssertNotNil(first["user"])
        XCTAssertNil(try emulator.authorize()["user"], "second authorization of the same client")
        XCTAssertNotNil(try emulator.authorize(client: EmulatorFixture.otherClient, redirect: "https://other.example.com/cb")["user"],
                        "first authorization of another client")
        let tokens = try emulator.exchange(code: try XCTUnwrap(first["code"])).json?.objectValue
        let refresh = try XCTUnwrap(tokens?["refresh_token"]?.stringValue)
        XCTAssertEqual(try emulator.postForm("/auth/revoke", [("client_id", EmulatorFixture.webClient),
            ("client_secret", try emulator.secret()), ("token", refresh), ("token_type_hint", "refresh_token")]).status, 200)
        XCTAssertNotNil(try emulator.authorize()["user"], "after revoking all tokens the next authorization is a first one")
    }

    func testCodeIDTokenCarriesCHashAndNonce() throws {
        let emulator = try EmulatorFixture()
        let fields = try emulator.authorize(responseType: "code id_token")
        let idToken = try XCTUnwrap(fields["id_token"])
        let identity = try emulator.verify(idToken)
        XCTAssertEqual(identity.nonce, "n-0S6_WzA2Mj")
        let claims = try JWSVerifier(allowedAlgorithms: [.rs256]).verify(idToken, keys: try emulator.keys()).claims
        let code = try XCTUnwrap(fields["code"])
        XCTAssertEqual(claims.string("c_hash"), Base64URL.encode(SHA256.hash(Array(code.utf8)).prefix(16)))
    }

    func testConsentPageEscapesAndItsAnswersWork() throws {
        let emulator = try EmulatorFixture(autoApprove: nil)
        let query = base + "&response_type=code&response_mode=form_post&scope=name%20email&state=%3Cscript%3Ealert(1)%3C%2Fscript%3E"
        let page = try emulator.get("/auth/authorize?" + query)
        XCTAssertEqual(page.status, 200)
        XCTAssertFalse(page.text.contains("<script>alert"), "state must be escaped")
        XCTAssertTrue(page.text.contains("id=\"approve\""))
        XCTAssertTrue(page.text.contains("maria.ruiz@example.com"))

        let approve = try emulator.postForm("/auth/authorize/consent", [("request", query), ("action", "approve"),
            ("known", ""), ("email", "typed@example.org"), ("first_name", "Typed"), ("last_name", "User"), ("hide_email", "1")])
        let fields = hiddenFields(approve.text)
        XCTAssertEqual(fields["state"], "<script>alert(1)</script>")
        let user = try XCTUnwrap(fields["user"])
        XCTAssertTrue(user.contains("@privaterelay.appleid.com"), user)
        XCTAssertTrue(user.contains("Typed"))
        let tokens = try emulator.exchange(code: try XCTUnwrap(fields["code"])).json?.objectValue
        let identity = try emulator.verify(try XCTUnwrap(tokens?["id_token"]?.stringValue), nonce: .none)
        XCTAssertTrue(identity.isPrivateEmail)
        XCTAssertTrue(identity.email?.hasSuffix("@privaterelay.appleid.com") == true)
        XCTAssertEqual(identity.subject, AppleIdentifiersProbe.subject(of: "typed@example.org", in: emulator))

        let cancel = try emulator.postForm("/auth/authorize/consent", [("request", query), ("action", "cancel")])
        XCTAssertEqual(hiddenFields(cancel.text), ["error": "user_cancelled_authorize", "state": "<script>alert(1)</script>"])

        let bad = try emulator.postForm("/auth/authorize/consent", [("request", query), ("action", "approve"), ("email", "not-an-email")])
        XCTAssertEqual(bad.status, 400)
        let tampered = try emulator.postForm("/auth/authorize/consent", [("request", query.replacingOccurrences(of: "app.example.com", with: "evil.example.com")), ("action", "approve"), ("known", "0")])
        XCTAssertEqual(tampered.error, "invalid_request", "the carried request is validated again")
    }

    func testQueryResponseModeRedirects() throws {
        let emulator = try EmulatorFixture()
        let reply = try emulator.get("/auth/authorize?" + base + "&response_type=code&state=abc")
        XCTAssertEqual(reply.status, 302)
        let location = try XCTUnwrap(reply.header("Location"))
        XCTAssertTrue(location.hasPrefix("https://app.example.com/.auth/callback?state=abc&code=c"), location)
    }
}

/// The subject of a user as the emulator derives it (learned through a real sign-in).
enum AppleIdentifiersProbe {
    static func subject(of email: String, in emulator: EmulatorFixture) -> String? {
        guard let fields = try? emulator.authorize(extra: "&emulator_auto_approve=" + email.replacingOccurrences(of: "@", with: "%40")),
              let code = fields["code"], let tokens = try? emulator.exchange(code: code).json?.objectValue,
              let token = tokens["id_token"]?.stringValue, let identity = try? emulator.verify(token)
        else { return nil }
        return identity.subject
    }
}
