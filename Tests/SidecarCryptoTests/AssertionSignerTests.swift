import Foundation
import XCTest
@testable import SidecarCrypto

/// The identity assertion's signer and per-worker cache.
final class AssertionSignerTests: XCTestCase {
    /// A fixed key whose RFC 7638 thumbprint was computed independently (Python `cryptography`).
    static let fixedKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgEjRWeJCrze8SNFZ4
        kKvN7xI0VniQq83vEjRWeJCrze+hRANCAARHHD51jEkEKFu6flMRjtD1JK3rB1fS
        W9L457DXbfpxTN1SD3rKiouResw39R3o8Mm7462Fg4LnAtwloS0J96hY
        -----END PRIVATE KEY-----

        """
    static let fixedKeyThumbprint = "D8HvZq-fumkXpCwYIpjAPoqJx7WoEcJUS7tPPyIEJKI"

    private func session(id: UInt8 = 7, expiresAt: Int64 = 10_000, name: String? = "José Ruiz", email: String? = "jose@example.com") -> Session {
        Session(id: [UInt8](repeating: id, count: 16), subject: "000123.abc.4567", email: email, emailVerified: true,
                privateEmail: false, name: name, issuedAt: 900, expiresAt: expiresAt, idleDeadline: 5000,
                lastRevalidation: 900, appleRefreshToken: nil)
    }

    private func signer(ttl: Int64 = 60) throws -> AssertionSigner {
        AssertionSigner(key: AssertionKey(try P256PrivateKey(pem: Array(Self.fixedKeyPEM.utf8))),
                        issuer: "https://app.example.com", audience: "my-app", ttl: ttl)
    }

    private func parts(_ token: [UInt8]) throws -> (header: [String: JSONValue], claims: [String: JSONValue], input: [UInt8], signature: [UInt8]) {
        let segments = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        XCTAssertEqual(segments.count, 3)
        func object(_ bytes: ArraySlice<UInt8>) throws -> [String: JSONValue] {
            let data = Data(try XCTUnwrap(Base64URL.decode(bytes: bytes)))
            return try XCTUnwrap(try JSONDecoder().decode(JSONValue.self, from: data).objectValue)
        }
        return (try object(segments[0]), try object(segments[1]), Array(token[..<(segments[0].count + 1 + segments[1].count)]),
                try XCTUnwrap(Base64URL.decode(bytes: segments[2])))
    }

    func testWhatTheSessionKeptOfTheIDTokenIsAssertedToo() throws {
        var session = session()
        session.extras = SessionExtras(transferSubject: "000999.old.0001", previousUserID: "legacy-42", realUserStatus: 2,
                                       authTime: 880)
        let (_, claims, _, _) = try parts(try signer().sign(session, now: 1000).token)
        XCTAssertEqual(claims["transfer_sub"], .string("000999.old.0001"))
        XCTAssertEqual(claims["previous_user_id"], .string("legacy-42"))
        XCTAssertEqual(claims["real_user_status"], .integer(2))
        XCTAssertEqual(claims["auth_time"], .integer(880))
    }

    func testKeyIDIsTheRFC7638Thumbprint() throws {
        let key = AssertionKey(try P256PrivateKey(pem: Array(Self.fixedKeyPEM.utf8)))
        XCTAssertEqual(key.keyID, Self.fixedKeyThumbprint)
        XCTAssertNotEqual(try AssertionKey.generate().keyID, key.keyID)
    }

    func testAssertionHasTheHeaderAndExactClaimsAndVerifiesWithOpenSSL() throws {
        let signer = try signer()
        let signed = try signer.sign(session(), now: 1000)
        let (header, claims, input, signature) = try parts(signed.token)
        XCTAssertEqual(header, ["alg": .string("ES256"), "kid": .string(Self.fixedKeyThumbprint), "typ": .string("JWT")])
        XCTAssertEqual(Set(claims.keys), ["iss", "aud", "sub", "email", "email_verified", "is_private_email", "name", "sid",
                                          "session_issued_at", "jti", "iat", "exp"])
        XCTAssertEqual(claims["is_private_email"], .bool(false))
        XCTAssertEqual(claims["session_issued_at"], .integer(900))
        XCTAssertEqual(claims["iss"], .string("https://app.example.com"))
        XCTAssertEqual(claims["aud"], .string("my-app"))
        XCTAssertEqual(claims["sub"], .string("000123.abc.4567"))
        XCTAssertEqual(claims["email"], .string("jose@example.com"))
        XCTAssertEqual(claims["email_verified"], .bool(true))
        XCTAssertEqual(claims["name"], .string("José Ruiz"))
        XCTAssertEqual(claims["sid"], .string(Base64URL.encode([UInt8](repeating: 7, count: 16))))
        XCTAssertEqual(claims["iat"], .integer(1000))
        XCTAssertEqual(claims["exp"], .integer(1060))
        XCTAssertEqual(signed.renewAt, 1045)

        // Raw r ‖ s → DER → EVP_DigestVerify with the public key, and a changed byte fails.
        XCTAssertEqual(signature.count, 64)
        let publicKey = signer.key.privateKey.publicKey
        XCTAssertTrue(publicKey.isValidSignature(signature, for: input))
        var tampered = input
        tampered[tampered.count - 1] ^= 1
        XCTAssertFalse(publicKey.isValidSignature(signature, for: tampered))
        let der = try XCTUnwrap(P256.derSignature(r: signature[0..<32], s: signature[32..<64]))
        XCTAssertTrue(der.withUnsafeBufferPointer { publicKey.key.verifySHA256(signature: $0, message: input) })
        // And through the project's own strict JWS verifier with the published JWK.
        let jwk = try XCTUnwrap(signer.key.publicJWK.objectValue)
        let verifiedKey = try P256PublicKey(jwkX: try XCTUnwrap(jwk["x"]?.stringValue), jwkY: try XCTUnwrap(jwk["y"]?.stringValue))
        XCTAssertTrue(verifiedKey.isValidSignature(signature, for: input))
    }

    func testAbsentEmailAndNameAreLeftOutAndExpNeverPassesTheSession() throws {
        let signed = try signer().sign(session(expiresAt: 1030, name: nil, email: nil), now: 1000)
        let claims = try parts(signed.token).claims
        XCTAssertNil(claims["email"])
        XCTAssertNil(claims["name"])
        XCTAssertEqual(claims["exp"], .integer(1030))
        XCTAssertEqual(signed.expiresAt, 1030)
        XCTAssertLessThanOrEqual(signed.renewAt, 1030)
    }

    func testDERAndRawSignatureConversion() throws {
        // r with leading zero bytes and s with its top bit set (DER adds a 0x00 sign byte).
        let r = [UInt8](repeating: 0, count: 3) + [UInt8](repeating: 0x11, count: 29)
        let s = [UInt8](repeating: 0xF0, count: 32)
        let der = try XCTUnwrap(P256.derSignature(r: r[...], s: s[...]))
        XCTAssertEqual(der[0], 0x30)
        XCTAssertEqual(der[2], 0x02)
        XCTAssertEqual(Int(der[3]), 29, "r's leading zeros are not encoded")
        XCTAssertEqual(P256.rawSignature(der: der), r + s)
        XCTAssertNil(P256.rawSignature(der: der + [0]), "trailing bytes")
        XCTAssertNil(P256.rawSignature(der: Array(der.dropLast())), "truncated")
        XCTAssertNil(P256.rawSignature(der: [0x30, 0x00]))
        XCTAssertNil(P256.rawSignature(der: []))
        // What OpenSSL signs comes back as 64 bytes that verify.
        let key = try P256PrivateKey.generate()
        for _ in 0..<16 {
            let message = try SecureRandom.bytes(40)
            let raw = try key.sign(message)
            XCTAssertEqual(raw.count, 64)
            XCTAssertTrue(key.publicKey.isValidSignature(raw, for: message))
        }
    }

    func testCacheReusesWithinTheTTLAndSignsAgainAfterThreeQuarters() throws {
        let cache = AssertionCache(signer: try signer(ttl: 60), capacity: 8)
        let first = try cache.assertion(for: session(), now: 1000)
        XCTAssertEqual(cache.signatures, 1)
        XCTAssertEqual(try cache.assertion(for: session(), now: 1000).token, first.token)
        XCTAssertEqual(try cache.assertion(for: session(), now: 1044).token, first.token)
        XCTAssertEqual(cache.signatures, 1, "signed per request")
        let renewed = try cache.assertion(for: session(), now: 1045)
        XCTAssertEqual(cache.signatures, 2)
        XCTAssertNotEqual(renewed.token, first.token)
        let (old, new) = (try parts(first.token).claims, try parts(renewed.token).claims)
        XCTAssertEqual(old["sid"], new["sid"])
        XCTAssertNotEqual(old["jti"], new["jti"], "jti is per signature")
        XCTAssertEqual(new["iat"], .integer(1045))
        // Another session has its own assertion; the first one's stays cached.
        let other = try cache.assertion(for: session(id: 9), now: 1046)
        XCTAssertNotEqual(try parts(other.token).claims["sid"], new["sid"])
        XCTAssertEqual(try cache.assertion(for: session(), now: 1046).token, renewed.token)
        XCTAssertEqual(cache.signatures, 3)
        // A clock that went back does not hand out an assertion issued in its future.
        _ = try cache.assertion(for: session(), now: 1000)
        XCTAssertEqual(cache.signatures, 4)
        cache.removeAll()
        _ = try cache.assertion(for: session(), now: 1001)
        XCTAssertEqual(cache.signatures, 5)
    }

    func testCacheIsBoundedAndCollisionsOnlyCostASignature() throws {
        let cache = AssertionCache(signer: try signer(), capacity: 2)
        // Ids of all 7s and all 9s share a slot of two (both odd in the slot bits).
        let a = try cache.assertion(for: session(id: 7), now: 1000)
        let b = try cache.assertion(for: session(id: 9), now: 1000)
        XCTAssertNotEqual(try parts(a.token).claims["sid"], try parts(b.token).claims["sid"])
        let again = try cache.assertion(for: session(id: 7), now: 1001)
        XCTAssertEqual(try parts(again.token).claims["sid"], try parts(a.token).claims["sid"])
        XCTAssertEqual(cache.signatures, 3)
    }

    func testKeySetListsCurrentThenPreviousAndNoPrivateMembers() throws {
        let current = try AssertionKey.generate(), previous = try AssertionKey.generate()
        let data = Data(AssertionKeySet.document(current: current, previous: previous))
        let keys = try XCTUnwrap(try JSONDecoder().decode(JSONValue.self, from: data).objectValue?["keys"])
        guard case .array(let list) = keys else { return XCTFail("keys is not an array") }
        XCTAssertEqual(list.compactMap { $0.objectValue?["kid"]?.stringValue }, [current.keyID, previous.keyID])
        for key in list { XCTAssertNil(key.objectValue?["d"]) }
        let single = Data(AssertionKeySet.document(current: current, previous: current))
        XCTAssertEqual(String(decoding: single, as: UTF8.self).components(separatedBy: "\"kid\"").count, 2)
    }
}
