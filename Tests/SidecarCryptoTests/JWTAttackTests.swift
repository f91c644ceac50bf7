import XCTest
@testable import SidecarCrypto

final class JWTAttackTests: XCTestCase {
    private let now: Int64 = 1_700_000_000
    private let verifier = AppleIDTokenVerifier(issuer: "https://appleid.apple.com", audiences: ["com.example.web"])

    private func claims(_ changes: [String: JSONValue?] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.web"),
            "sub": .string("001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433"), "iat": .integer(now - 10),
            "exp": .integer(now + 600), "nonce": .string("n-hash"), "nonce_supported": .bool(true),
        ]
        for (key, value) in changes { claims[key] = value }
        return claims
    }

    private func assertRejected(_ token: String, _ expected: JWTError, nonce: NonceExpectation = .oneOf(["n-hash"]),
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try verifier.verify(token, keys: TestKeys.appleKeySet, now: now, nonce: nonce),
                             file: file, line: line) { error in
            XCTAssertEqual(error as? JWTError, expected, file: file, line: line)
            XCTAssertEqual((error as? JWTError)?.reason, expected.reason, file: file, line: line)
        }
    }

    func testValidTokenIsAccepted() throws {
        let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims())
        let identity = try verifier.verify(token, keys: TestKeys.appleKeySet, now: now, nonce: .oneOf(["other", "n-hash"]))
        XCTAssertEqual(identity.subject, "001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433")
        XCTAssertEqual(identity.nonce, "n-hash")
    }

    func testAlgNone() {
        let token = TokenFactory.encode(.object(["alg": .string("none"), "kid": .string(TestKeys.appleKeyID)]))
            + "." + TokenFactory.encode(.object(claims())) + "."
        assertRejected(token, .algorithmNotAllowed)
    }

    func testHS256WithPublicKeyAsSecret() {
        let input = TokenFactory.encode(.object(["alg": .string("HS256"), "kid": .string(TestKeys.appleKeyID)]))
            + "." + TokenFactory.encode(.object(claims()))
        let mac = HMACSHA256.authenticate(key: TestKeys.apple.publicKey.modulus, message: Array(input.utf8))
        assertRejected(input + "." + Base64URL.encode(mac), .algorithmNotAllowed)
    }

    func testUnknownAndMissingKid() throws {
        assertRejected(try TokenFactory.signRS256(header: ["alg": .string("RS256"), "kid": .string("nope")], claims: claims()),
                       .unknownKey)
        assertRejected(try TokenFactory.signRS256(header: ["alg": .string("RS256")], claims: claims()), .missingKeyID)
    }

    func testCritHeader() throws {
        var header = TokenFactory.appleHeader
        header["crit"] = .array([.string("exp")])
        assertRejected(try TokenFactory.signRS256(header: header, claims: claims()), .critHeader)
    }

    func testWrongIssuerAndAudience() throws {
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                                  claims: claims(["iss": .string("https://evil.example")])), .wrongIssuer)
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                                  claims: claims(["aud": .string("com.other")])), .wrongAudience)
        // An array audience containing ours is fine.
        let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                               claims: claims(["aud": .array([.string("x"), .string("com.example.web")])]))
        XCTAssertNoThrow(try verifier.verify(token, keys: TestKeys.appleKeySet, now: now, nonce: .oneOf(["n-hash"])))
    }

    func testExpiredAndIssuedInFutureWithLeeway() throws {
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                                  claims: claims(["exp": .integer(now - 61)])), .expired)
        let withinLeeway = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims(["exp": .integer(now - 30)]))
        XCTAssertNoThrow(try verifier.verify(withinLeeway, keys: TestKeys.appleKeySet, now: now, nonce: .oneOf(["n-hash"])))
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                                  claims: claims(["iat": .integer(now + 61)])), .issuedInFuture)
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader,
                                                  claims: claims(["nbf": .integer(now + 120)])), .notYetValid)
    }

    func testNonceMissingAndWrong() throws {
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims(["nonce": JSONValue?.none])),
                       .nonceMissing)
        assertRejected(try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims()), .nonceMismatch,
                       nonce: .oneOf(["something-else"]))
    }

    func testPayloadChangedAfterSigning() throws {
        let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims())
        let parts = token.split(separator: ".").map(String.init)
        let forged = TokenFactory.encode(.object(claims(["sub": .string("attacker")])))
        assertRejected(parts[0] + "." + forged + "." + parts[2], .badSignature)
    }

    func testStructuralAttacks() throws {
        let token = try TokenFactory.signRS256(header: TokenFactory.appleHeader, claims: claims())
        assertRejected(String(token.dropLast(10)), .badSignature)
        assertRejected(String(token.prefix(while: { $0 != "." })), .malformed("expected 3 segments"))
        assertRejected(token + ".AAAA", .malformed("expected 3 segments"))
        let parts = token.split(separator: ".").map(String.init)
        let paddedSignature = parts[2] + (parts[2].count % 4 == 0 ? "" : String(repeating: "=", count: 4 - parts[2].count % 4))
        assertRejected(parts[0] + "." + parts[1] + "." + paddedSignature, .malformed("signature encoding"))
        assertRejected(parts[0] + "=." + parts[1] + "." + parts[2], .malformed("header encoding"))
        assertRejected(token + String(repeating: "A", count: 1 << 20), .tooLarge)
        assertRejected(TokenFactory.encode(.string("x")) + "." + parts[1] + "." + parts[2], .malformed("header is not a JSON object"))
        let arrayPayload = try TokenFactory.signRS256(header: TokenFactory.appleHeader, rawPayload: "[1,2]")
        assertRejected(arrayPayload, .malformed("payload is not a JSON object"))
    }

    func testES256TokenRefusedWhereOnlyRS256IsAllowed() throws {
        let key = try P256PrivateKey.generate()
        let token = try JWTSigner.sign(claims: claims(), keyID: TestKeys.appleKeyID, key: .es256(key))
        assertRejected(token, .algorithmNotAllowed)
    }
}
