import XCTest
@testable import SidecarCrypto

final class AppleTokenTests: XCTestCase {
    /// The two real Apple payloads from APPLE.md (string and boolean forms), re-signed with a test key.
    func testRealPayloadShapes() throws {
        let older = #"{"iss":"https://appleid.apple.com","aud":"com.litandard.lifelike.singin","exp":1600218935,"iat":1600132535,"sub":"001772.65de7668e3fd45c58a3b29b7f76a4074.0613","c_hash":"vNJkwM3gAcH6fgDC6AQzBw","email":"ef95yesf8f@privaterelay.appleid.com","email_verified":"true","is_private_email":"true","auth_time":1600132535,"nonce_supported":true}"#
        let newer = #"{"iss":"https://appleid.apple.com","aud":"de.lunaone.sign-in-with-apple-example","exp":1752662157,"iat":1752575757,"sub":"000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105","c_hash":"ZCrproioDSdSQMoqYW3-7Q","email":"ugs6qtpehf@privaterelay.appleid.com","email_verified":true,"is_private_email":true,"auth_time":1752575757,"nonce_supported":true,"real_user_status":0}"#

        let v1 = AppleIDTokenVerifier(issuer: "https://appleid.apple.com", audiences: ["com.litandard.lifelike.singin"])
        let id1 = try v1.verify(try TokenFactory.signRS256(header: TokenFactory.appleHeader, rawPayload: older),
                                keys: TestKeys.appleKeySet, now: 1600132600, nonce: .none)
        XCTAssertEqual(id1, AppleIdentity(
            subject: "001772.65de7668e3fd45c58a3b29b7f76a4074.0613", audience: "com.litandard.lifelike.singin",
            email: "ef95yesf8f@privaterelay.appleid.com", emailVerified: true, isPrivateEmail: true,
            realUserStatus: nil, authTime: 1600132535, issuedAt: 1600132535, expiresAt: 1600218935, nonce: nil))

        let v2 = AppleIDTokenVerifier(issuer: "https://appleid.apple.com", audiences: ["de.lunaone.sign-in-with-apple-example"])
        let token2 = try TokenFactory.signRS256(header: TokenFactory.appleHeader, rawPayload: newer)
        let id2 = try v2.verify(token2, keys: TestKeys.appleKeySet, now: 1752575800, nonce: .none)
        XCTAssertEqual(id2.subject, "000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105")
        XCTAssertTrue(id2.emailVerified)
        XCTAssertTrue(id2.isPrivateEmail)
        XCTAssertEqual(id2.realUserStatus, 0)
        // nonce_supported: true and no nonce in the token, but one was expected.
        XCTAssertThrowsError(try v2.verify(token2, keys: TestKeys.appleKeySet, now: 1752575800, nonce: .oneOf(["n"]))) {
            XCTAssertEqual($0 as? JWTError, .nonceMissing)
        }
    }

    func testNativeNonceAsRawOrSHA256Hex() throws {
        let raw = "sealed-nonce-value"
        let verifier = AppleIDTokenVerifier(issuer: "https://appleid.apple.com", audiences: ["com.example.app"])
        for carried in [raw, SHA256.hexDigest(Array(raw.utf8))] {
            let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: [
                "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.app"), "sub": .string("s"),
                "iat": .integer(100), "exp": .integer(200), "nonce": .string(carried),
                "email_verified": .string("false"),
            ])
            let identity = try verifier.verify(token, keys: TestKeys.appleKeySet, now: 150,
                                               nonce: .oneOf([raw, SHA256.hexDigest(Array(raw.utf8))]))
            XCTAssertEqual(identity.nonce, carried)
            XCTAssertFalse(identity.emailVerified)
            XCTAssertNil(identity.email)
        }
    }

    func testNotificationWithStringAndObjectEvents() throws {
        let real = #"{"iss":"https://appleid.apple.com","aud":"de.lunaone.sign-in-with-apple-example","exp":1752658597,"iat":1752572197,"jti":"8sIboCeUBQuZ0M7x91YKZQ","events":"{\"type\":\"consent-revoked\",\"sub\":\"000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105\",\"event_time\":1752572190719}"}"#
        let verifier = AppleIDTokenVerifier(issuer: "https://appleid.apple.com",
                                            audiences: ["com.example.web", "de.lunaone.sign-in-with-apple-example"])
        let note = try verifier.verifyNotification(try TokenFactory.signRS256(header: TokenFactory.appleHeader, rawPayload: real),
                                                   keys: TestKeys.appleKeySet, now: 1752572200)
        XCTAssertEqual(note, AppleNotification(
            jwtID: "8sIboCeUBQuZ0M7x91YKZQ", audience: "de.lunaone.sign-in-with-apple-example", issuedAt: 1752572197,
            type: .consentRevoked, subject: "000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105",
            eventTimeMilliseconds: 1752572190719, email: nil, isPrivateEmail: nil))
        XCTAssertTrue(note.type.revokesSessions)

        for (name, type) in [("account-delete", AppleNotification.EventType.accountDeleted),
                             ("account-deleted", .accountDeleted), ("email-disabled", .emailDisabled),
                             ("email-enabled", .emailEnabled), ("brand-new", .unknown("brand-new"))] {
            let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: [
                "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.web"),
                "iat": .integer(100), "exp": .integer(200), "jti": .string("j-\(name)"),
                "events": .object(["type": .string(name), "sub": .string("s1"), "event_time": .integer(99_000),
                                   "email": .string("x@privaterelay.appleid.com"), "is_private_email": .string("true")]),
            ])
            let parsed = try verifier.verifyNotification(token, keys: TestKeys.appleKeySet, now: 150)
            XCTAssertEqual(parsed.type, type)
            XCTAssertEqual(parsed.isPrivateEmail, true)
        }
        let missingEvents = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: [
            "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.web"),
            "iat": .integer(100), "exp": .integer(200), "jti": .string("j"), "events": .string("not json"),
        ])
        XCTAssertThrowsError(try verifier.verifyNotification(missingEvents, keys: TestKeys.appleKeySet, now: 150)) {
            XCTAssertEqual($0 as? JWTError, .invalidClaim("events"))
        }
    }
}
