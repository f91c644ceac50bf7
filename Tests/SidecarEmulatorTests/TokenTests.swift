import XCTest
import SidecarApple
import SidecarCrypto

final class TokenTests: XCTestCase {
    func testCodeExchangeAnswersAppleShapedTokensThatVerify() throws {
        let emulator = try EmulatorFixture()
        let pkce = EmulatorFixture.pkce()
        let code = try XCTUnwrap(try emulator.authorize(challenge: pkce.challenge)["code"])
        let reply = try emulator.exchange(code: code, verifier: pkce.verifier)
        XCTAssertEqual(reply.status, 200, reply.text)
        let body = try XCTUnwrap(reply.json?.objectValue)
        XCTAssertEqual(Set(body.keys), ["access_token", "token_type", "expires_in", "refresh_token", "id_token"])
        XCTAssertEqual(body["token_type"]?.stringValue, "Bearer")
        XCTAssertEqual(body["expires_in"]?.integerValue, 3600)
        let idToken = try XCTUnwrap(body["id_token"]?.stringValue)
        let identity = try emulator.verify(idToken)
        XCTAssertEqual(identity.email, "maria@example.com")
        XCTAssertTrue(identity.emailVerified)
        XCTAssertFalse(identity.isPrivateEmail)
        XCTAssertEqual(identity.nonce, "n-0S6_WzA2Mj")
        XCTAssertNotNil(identity.subject.range(of: #"^000\d{3}\.[0-9a-f]{32}\.\d{4}$"#, options: .regularExpression), identity.subject)
        let verified = try JWSVerifier(allowedAlgorithms: [.rs256]).verify(idToken, keys: try emulator.keys())
        XCTAssertEqual(Set(verified.header.keys), ["alg", "kid"], "Apple's header has no typ")
        XCTAssertEqual(verified.claims.integer("exp"), emulator.clock.now + 86_400)
        XCTAssertEqual(verified.claims["nonce_supported"], .bool(true))
        XCTAssertNil(verified.claims["is_private_email"], "absent when the real address is shared")
        XCTAssertEqual(verified.claims.string("at_hash"),
                       Base64URL.encode(SHA256.hash(Array(body["access_token"]!.stringValue!.utf8)).prefix(16)))
        // The same person gets the same sub next time.
        let again = try emulator.exchange(code: try XCTUnwrap(try emulator.authorize()["code"]))
        XCTAssertEqual(try emulator.verify(again.json!.objectValue!["id_token"]!.stringValue!).subject, identity.subject)
    }

    func testCodeIsSingleUseAndExpires() throws {
        let emulator = try EmulatorFixture()
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        XCTAssertEqual(try emulator.exchange(code: code).status, 200)
        let reuse = try emulator.exchange(code: code)
        XCTAssertEqual(reuse.status, 400)
        XCTAssertEqual(reuse.error, "invalid_grant")
        XCTAssertEqual(reuse.json?.objectValue?["error_description"]?.stringValue, "The code has already been used.")

        let late = try XCTUnwrap(try emulator.authorize()["code"])
        emulator.clock.advance(299)
        let fresh = try XCTUnwrap(try emulator.authorize()["code"])
        emulator.clock.advance(2)
        XCTAssertEqual(try emulator.exchange(code: late).error, "invalid_grant", "older than 5 minutes")
        XCTAssertEqual(try emulator.exchange(code: fresh).status, 200)
        XCTAssertEqual(try emulator.exchange(code: "c-made-up").error, "invalid_grant")
    }

    func testRedirectURIMustMatchAndCodeBelongsToItsClient() throws {
        let emulator = try EmulatorFixture()
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        XCTAssertEqual(try emulator.exchange(code: code, redirect: "https://app.example.com/.auth/callback/").error, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: code, redirect: nil).error, "invalid_request")
        XCTAssertEqual(try emulator.exchange(code: code, client: EmulatorFixture.otherClient).error, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: code).status, 200, "failed attempts do not consume the code")
    }

    func testPKCE() throws {
        let emulator = try EmulatorFixture()
        let pkce = EmulatorFixture.pkce()
        let code = try XCTUnwrap(try emulator.authorize(challenge: pkce.challenge)["code"])
        XCTAssertEqual(try emulator.exchange(code: code).error, "invalid_request", "verifier missing")
        XCTAssertEqual(try emulator.exchange(code: code, verifier: EmulatorFixture.pkce().verifier).error, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: code, verifier: "short").error, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: code, verifier: pkce.verifier).status, 200)
        let plain = try XCTUnwrap(try emulator.authorize()["code"])
        XCTAssertEqual(try emulator.exchange(code: plain, verifier: pkce.verifier).error, "invalid_grant", "no challenge was sent")
    }

    func testClientSecretIsCheckedLikeApple() throws {
        let emulator = try EmulatorFixture()
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        let now = emulator.clock.now
        let otherKey = try P256PrivateKey.generate()
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"KEY1234567"}"#.utf8))
        let tooLong = try JWTSigner.sign(claims: [
            "iss": .string(EmulatorFixture.teamID), "sub": .string(EmulatorFixture.webClient), "aud": .string(emulator.issuer),
            "iat": .integer(now), "exp": .integer(now + 15_777_001),
        ], keyID: EmulatorFixture.keyID, key: .es256(emulator.clientKey))
        let bad: [(String, String)] = [
            ("bad signature", try emulator.secret(key: otherKey)),
            ("unknown kid", try emulator.secret(keyID: "OTHERKEY99")),
            ("wrong sub case", try emulator.secret(client: "com.example.WEB")),
            ("wrong aud", try emulator.secret(audience: "https://appleid.apple.com")),
            ("wrong iss", try emulator.secret(team: "OTHERTEAM1")),
            ("expired", try emulator.secret(issuedAt: now - 7200, lifetime: 3600)),
            ("iat in the future", try emulator.secret(issuedAt: now + 600)),
            ("lifetime over 15,777,000 s", tooLong),
            ("alg none", header.replacingOccurrences(of: header, with: Base64URL.encode(Array(#"{"alg":"none","kid":"KEY1234567"}"#.utf8))) + ".e30."),
            ("not a JWT", "secret"),
        ]
        for (why, secret) in bad {
            let reply = try emulator.exchange(code: code, secret: secret)
            XCTAssertEqual(reply.status, 400, why)
            XCTAssertEqual(reply.error, "invalid_client", why)
        }
        XCTAssertEqual(try emulator.exchange(code: code, secret: try emulator.secret(issuedAt: now + 30)).status, 200,
                       "a little clock skew is tolerated")
    }

    func testOnlyFormBodiesAndKnownGrants() throws {
        let emulator = try EmulatorFixture()
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        let json = try emulator.postJSON("/auth/token", #"{"grant_type":"authorization_code","code":"\#(code)","client_id":"com.example.web","client_secret":"\#(try emulator.secret())","redirect_uri":"\#(EmulatorFixture.redirect)"}"#)
        XCTAssertEqual(json.status, 400)
        XCTAssertEqual(json.error, "invalid_request")
        let unsupported = try emulator.postForm("/auth/token", [("grant_type", "password"), ("client_id", EmulatorFixture.webClient),
                                                               ("client_secret", try emulator.secret())])
        XCTAssertEqual(unsupported.error, "unsupported_grant_type")
        let unknownClient = try emulator.exchange(code: code, client: "com.unknown", secret: try emulator.secret(client: "com.unknown"))
        XCTAssertEqual(unknownClient.error, "invalid_client")
        XCTAssertEqual(try RawHTTP.request(emulator.address, "GET", "/auth/token").status, 405)
    }

    func testRefreshGrantAndRevocation() throws {
        let emulator = try EmulatorFixture()
        let tokens = try emulator.exchange(code: try XCTUnwrap(try emulator.authorize()["code"])).json?.objectValue
        let refresh = try XCTUnwrap(tokens?["refresh_token"]?.stringValue)
        func refreshGrant(_ token: String, client: String = EmulatorFixture.webClient) throws -> HTTPReply {
            try emulator.postForm("/auth/token", [("grant_type", "refresh_token"), ("refresh_token", token),
                ("client_id", client), ("client_secret", try emulator.secret(client: client))])
        }
        let refreshed = try refreshGrant(refresh)
        XCTAssertEqual(refreshed.status, 200)
        let body = try XCTUnwrap(refreshed.json?.objectValue)
        XCTAssertNil(body["refresh_token"], "Apple answers no new refresh token")
        let identity = try emulator.verify(try XCTUnwrap(body["id_token"]?.stringValue), nonce: .none)
        XCTAssertNil(identity.nonce)
        XCTAssertEqual(try refreshGrant(refresh, client: EmulatorFixture.otherClient).error, "invalid_grant")
        XCTAssertEqual(try refreshGrant("r-made-up").error, "invalid_grant")

        func revoke(_ token: String, secret: String? = nil, hint: String = "refresh_token") throws -> HTTPReply {
            try emulator.postForm("/auth/revoke", [("client_id", EmulatorFixture.webClient),
                ("client_secret", try secret ?? emulator.secret()), ("token", token), ("token_type_hint", hint)])
        }
        XCTAssertEqual(try revoke(refresh, secret: try emulator.secret(team: "OTHERTEAM1")).error, "invalid_client")
        XCTAssertEqual(try refreshGrant(refresh).status, 200, "a refused revocation revokes nothing")
        let revoked = try revoke(refresh)
        XCTAssertEqual(revoked.status, 200)
        XCTAssertTrue(revoked.body.isEmpty)
        XCTAssertEqual(try refreshGrant(refresh).error, "invalid_grant")
        XCTAssertEqual(try revoke("unknown-token", hint: "access_token").status, 200, "unknown tokens are fine")
        XCTAssertEqual(try revoke("unknown-token", hint: "id_token").status, 400)
    }

    func testKeyRotationKeepsOldKeysPublished() throws {
        let emulator = try EmulatorFixture()
        let before = try emulator.keys().keyIDs
        XCTAssertEqual(before.count, 1)
        let rotated = try RawHTTP.request(emulator.address, "POST", "/emulator/rotate-keys", timeoutSeconds: 30)  // an RSA key generated
        let newKid = try XCTUnwrap(rotated.json?.objectValue?["kid"]?.stringValue)
        let after = try emulator.keys().keyIDs
        XCTAssertEqual(Set(after), Set(before + [newKid]))
        let tokens = try emulator.exchange(code: try XCTUnwrap(try emulator.authorize()["code"])).json?.objectValue
        let idToken = try XCTUnwrap(tokens?["id_token"]?.stringValue)
        XCTAssertEqual(try JWSVerifier(allowedAlgorithms: [.rs256]).verify(idToken, keys: try emulator.keys()).keyID, newKid)
        XCTAssertNoThrow(try emulator.verify(idToken))
        XCTAssertThrowsError(try AppleIDTokenVerifier(issuer: emulator.issuer, audiences: [EmulatorFixture.webClient])
            .verify(idToken, keys: try JWKSet(json: Array(#"{"keys":[]}"#.utf8) + []), now: emulator.clock.now, nonce: .none))
    }

    func testNativeClientExchangesWithoutRedirectURI() throws {
        let emulator = try EmulatorFixture()
        // Native codes come from the device; the emulator's web flow refuses a bundle id.
        let reply = try emulator.get("/auth/authorize?client_id=com.example.app&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code")
        XCTAssertEqual(reply.error, "unauthorized_client")
        let refused = try emulator.exchange(code: "c-unknown", client: EmulatorFixture.nativeClient, redirect: nil)
        XCTAssertEqual(refused.error, "invalid_grant", "the client authenticates; the code is what is wrong")
    }
}
