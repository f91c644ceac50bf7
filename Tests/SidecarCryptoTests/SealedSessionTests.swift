import XCTest
@testable import SidecarCrypto

final class SealedSessionTests: XCTestCase {
    private let cookie = "__Host-sidecar"
    private let secretA = [UInt8](repeating: 0xa1, count: 32)
    private let secretB = [UInt8](repeating: 0xb2, count: 48)

    private func session(now: Int64 = 1_000_000, name: String? = "Maria Ruiz", refresh: String? = "r.token") -> Session {
        Session(id: Array(0..<16), subject: "001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433",
                email: "ep9ks2tnph@privaterelay.appleid.com", emailVerified: true, privateEmail: true,
                name: name, issuedAt: now, expiresAt: now + 7 * 86_400, idleDeadline: now + 86_400,
                lastRevalidation: now, appleRefreshToken: refresh)
    }

    func testRoundTrip() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        for original in [session(), session(name: nil, refresh: nil)] {
            let token = try sealer.sealSession(original, cookieName: cookie)
            let opened = try sealer.open(Array(token.utf8), context: cookie, now: 1_000_001)
            XCTAssertEqual(opened.payload, original)
            XCTAssertFalse(opened.needsReseal)
        }
    }

    func testIssueMillisecondsRoundTripAndOlderValuesReadAsWholeSeconds() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        var precise = session()
        precise.issuedAtMillis = 731
        let opened = try sealer.open(Array(try sealer.sealSession(precise, cookieName: cookie).utf8),
                                     context: cookie, now: 1_000_001).payload
        XCTAssertEqual(opened.issuedAtMillis, 731)
        XCTAssertEqual(opened.issuedAtMs, 1_000_000_731)
        // A value sealed without the field (before it existed) encodes byte for byte as before.
        var legacy = ByteWriter()
        session().encode(into: &legacy)
        var withoutMillis = ByteWriter()
        var zero = session()
        zero.issuedAtMillis = 0
        zero.encode(into: &withoutMillis)
        XCTAssertEqual(legacy.bytes, withoutMillis.bytes)
        let legacyMs = try legacy.bytes.withUnsafeBufferPointer { buffer in
            var reader = ByteReader(buffer)
            return try Session(from: &reader).issuedAtMs
        }
        XCTAssertEqual(legacyMs, 1_000_000_000)
    }

    func testEveryBitFlipAndTruncationIsRejected() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let token = try sealer.sealSession(session(), cookieName: cookie)
        guard let envelope = Base64URL.decode(token) else { return XCTFail("not base64url") }
        var flips = 0
        for byte in envelope.indices {
            for bit in 0..<8 {
                var tampered = envelope
                tampered[byte] ^= 1 << bit
                XCTAssertThrowsError(try sealer.open(Array(Base64URL.encode(tampered).utf8), context: cookie, now: 1_000_001))
                flips += 1
            }
        }
        XCTAssertEqual(flips, envelope.count * 8)
        let bytes = Array(token.utf8)
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try sealer.open(Array(bytes.prefix(length)), context: cookie, now: 1_000_001))
        }
        for length in 0..<envelope.count {
            XCTAssertThrowsError(try sealer.open(Array(Base64URL.encode(envelope.prefix(length)).utf8),
                                                 context: cookie, now: 1_000_001))
        }
    }

    func testWrongCookieNameAndOtherPayloadKindsAreRejected() throws {
        let sessions = try SessionSealer(secrets: [secretA])
        let token = try sessions.sealSession(session(), cookieName: cookie)
        XCTAssertThrowsError(try sessions.open(Array(token.utf8), context: "sidecar", now: 1_000_001)) {
            XCTAssertEqual($0 as? SealedOpenError, .authenticationFailed)
        }
        let nonces = try NativeNonceSealer(secrets: [secretA])
        let nonce = try nonces.seal(NativeNonce.random(expiresAt: 2_000_000), context: cookie)
        XCTAssertThrowsError(try sessions.open(Array(nonce.utf8), context: cookie, now: 1_000_001))
        let states = try LoginStateSealer(secrets: [secretA])
        XCTAssertThrowsError(try states.open(Array(token.utf8), context: cookie, now: 1_000_001))
    }

    func testRotation() throws {
        let old = try SessionSealer(secrets: [secretA])
        let token = try old.sealSession(session(), cookieName: cookie)
        let rotated = try SessionSealer(secrets: [secretB, secretA])
        let opened = try rotated.open(Array(token.utf8), context: cookie, now: 1_000_001)
        XCTAssertTrue(opened.needsReseal)
        let resealed = try rotated.sealSession(opened.payload, cookieName: cookie)
        XCTAssertFalse(try rotated.open(Array(resealed.utf8), context: cookie, now: 1_000_001).needsReseal)
        let removed = try SessionSealer(secrets: [secretB])
        XCTAssertThrowsError(try removed.open(Array(token.utf8), context: cookie, now: 1_000_001)) {
            XCTAssertEqual($0 as? SealedOpenError, .unknownKey)
        }
    }

    func testAbsoluteAndIdleExpiry() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let value = session()
        let token = Array(try sealer.sealSession(value, cookieName: cookie).utf8)
        XCTAssertNoThrow(try sealer.open(token, context: cookie, now: value.idleDeadline - 1))
        XCTAssertThrowsError(try sealer.open(token, context: cookie, now: value.idleDeadline)) {
            XCTAssertEqual($0 as? SealedOpenError, .idleExpired)
        }
        var longIdle = value
        longIdle.idleDeadline = value.expiresAt + 100
        let token2 = Array(try sealer.sealSession(longIdle, cookieName: cookie).utf8)
        XCTAssertThrowsError(try sealer.open(token2, context: cookie, now: value.expiresAt)) {
            XCTAssertEqual($0 as? SealedOpenError, .expired)
        }
    }

    func testSecretsMustBeLongEnoughAndDistinct() {
        XCTAssertThrowsError(try SessionSealer(secrets: [[UInt8](repeating: 1, count: 31)])) {
            XCTAssertEqual($0 as? Sealer.ConfigurationError, .secretTooShort(index: 0))
        }
        XCTAssertThrowsError(try SessionSealer(secrets: [secretA, [1, 2]])) {
            XCTAssertEqual($0 as? Sealer.ConfigurationError, .secretTooShort(index: 1))
        }
        XCTAssertThrowsError(try SessionSealer(secrets: [])) {
            XCTAssertEqual($0 as? Sealer.ConfigurationError, .noSecrets)
        }
        XCTAssertThrowsError(try SessionSealer(secrets: [secretA, secretA])) {
            XCTAssertEqual($0 as? Sealer.ConfigurationError, .duplicateSecret(index: 1))
        }
    }

    func testCookieSizeWithLargeFieldsStaysWellUnder4KB() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let big = session(name: String(repeating: "é", count: 128), refresh: String(repeating: "r", count: 500))
        XCTAssertEqual(big.name?.utf8.count, 256)
        let token = try sealer.sealSession(big, cookieName: cookie)
        let setCookie = "\(cookie)=\(token); Path=/; Max-Age=604800; HttpOnly; Secure; SameSite=Lax"
        XCTAssertLessThan(setCookie.utf8.count, 2048, "Set-Cookie is \(setCookie.utf8.count) bytes")
        XCTAssertEqual(try sealer.open(Array(token.utf8), context: cookie, now: 1_000_001).payload, big)
    }

    func testOversizedFieldsAreRefusedAtSealing() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        XCTAssertThrowsError(try sealer.sealSession(session(name: String(repeating: "x", count: 2000)), cookieName: cookie))
    }

    func testLoginStateAndNativeNonce() throws {
        let states = try LoginStateSealer(secrets: [secretA])
        let state = LoginState(state: "s1", nonce: "n1", codeVerifier: "v1", redirectTarget: "/app?x=1",
                               createdAt: 100, expiresAt: 700)
        let token = Array(try states.seal(state, context: "sidecar_login").utf8)
        XCTAssertEqual(try states.open(token, context: "sidecar_login", now: 200).payload, state)
        XCTAssertThrowsError(try states.open(token, context: "sidecar_login", now: 700)) {
            XCTAssertEqual($0 as? SealedOpenError, .expired)
        }
        let nonces = try NativeNonceSealer(secrets: [secretA])
        let nonce = try NativeNonce.random(expiresAt: 1000)
        let sealed = Array(try nonces.seal(nonce, context: "native").utf8)
        XCTAssertEqual(try nonces.open(sealed, context: "native", now: 999).payload, nonce)
        XCTAssertThrowsError(try nonces.open(sealed, context: "native", now: 1000))
        XCTAssertThrowsError(try states.open(sealed, context: "native", now: 10))
    }
}
