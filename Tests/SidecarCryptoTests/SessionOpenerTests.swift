import XCTest
@testable import SidecarCrypto

/// `SessionOpener` (keyed contexts, one reused buffer) must agree with `SessionSealer.open`
/// on every value, in any order, including after failures.
final class SessionOpenerTests: XCTestCase {
    private let cookie = "__Host-sidecar"
    private let secretA = [UInt8](repeating: 0xa1, count: 32)
    private let secretB = [UInt8](repeating: 0xb2, count: 48)
    private let now: Int64 = 1_000_001

    private func session(subject: String = "001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433", name: String? = "Maria Ruiz",
                         refresh: String? = "r.token") -> Session {
        Session(id: Array(0..<16), subject: subject, email: "ep9ks2tnph@privaterelay.appleid.com", emailVerified: true,
                privateEmail: true, name: name, issuedAt: 1_000_000, expiresAt: 1_000_000 + 7 * 86_400,
                idleDeadline: 1_000_000 + 86_400, lastRevalidation: 1_000_000, appleRefreshToken: refresh)
    }

    private func open(_ opener: SessionOpener, _ token: String, now: Int64? = nil) throws -> (payload: Session, needsReseal: Bool) {
        try Array(token.utf8).withUnsafeBufferPointer { try opener.open($0, now: now ?? self.now) }
    }

    private func error(_ opener: SessionOpener, _ token: String, now: Int64? = nil) -> SealedOpenError? {
        do {
            _ = try open(opener, token, now: now)
            return nil
        } catch {
            return error as? SealedOpenError
        }
    }

    func testOpensWhatTheSealerSealsInAnyOrderAndAfterFailures() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let opener = try SessionOpener(sealer, context: cookie)
        let long = session(name: String(repeating: "é", count: 400), refresh: String(repeating: "r", count: 2_000))
        let originals = [session(), session(name: nil, refresh: nil), long, session(subject: "x")]
        let tokens = try originals.map { try sealer.sealSession($0, cookieName: cookie) }
        var tampered = Base64URL.decode(tokens[0])!
        tampered[tampered.count - 1] ^= 1
        for round in 0..<3 {
            for (original, token) in zip(originals, tokens) {
                let opened = try open(opener, token)
                XCTAssertEqual(opened.payload, original, "round \(round)")
                XCTAssertFalse(opened.needsReseal)
                // A failed tag check in between must not disturb the next open.
                XCTAssertEqual(error(opener, Base64URL.encode(tampered)), .authenticationFailed)
            }
        }
    }

    func testTheSameErrorsAsTheSealer() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let opener = try SessionOpener(sealer, context: cookie)
        let token = try sealer.sealSession(session(), cookieName: cookie)
        let envelope = Base64URL.decode(token)!
        var cases: [String] = ["", "a", "!!!!", String(token.dropLast()), token + "A", Base64URL.encode(envelope.prefix(20))]
        for byte in stride(from: 0, to: envelope.count, by: 7) {
            var flipped = envelope
            flipped[byte] ^= 0x40
            cases.append(Base64URL.encode(flipped))
        }
        for value in cases {
            let expected: SealedOpenError?
            do {
                _ = try sealer.open(Array(value.utf8), context: cookie, now: now)
                expected = nil
            } catch {
                expected = error
            }
            XCTAssertNotNil(expected, value)
            XCTAssertEqual(error(opener, value), expected, value)
        }
        XCTAssertEqual(try open(opener, token).payload, session())
    }

    func testBoundToTheCookieName() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let token = try sealer.sealSession(session(), cookieName: cookie)
        XCTAssertEqual(error(try SessionOpener(sealer, context: "sidecar"), token), .authenticationFailed)
    }

    func testRotationAndUnknownKeys() throws {
        let old = try SessionSealer(secrets: [secretB])
        let rotated = try SessionOpener(try SessionSealer(secrets: [secretA, secretB]), context: cookie)
        let token = try old.sealSession(session(), cookieName: cookie)
        let opened = try open(rotated, token)
        XCTAssertTrue(opened.needsReseal)
        XCTAssertEqual(opened.payload, session())
        XCTAssertEqual(error(try SessionOpener(try SessionSealer(secrets: [secretA]), context: cookie), token), .unknownKey)
    }

    func testExpiry() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let opener = try SessionOpener(sealer, context: cookie)
        let token = try sealer.sealSession(session(), cookieName: cookie)
        XCTAssertEqual(error(opener, token, now: 1_000_000 + 86_400), .idleExpired)
        XCTAssertEqual(error(opener, token, now: 1_000_000 + 7 * 86_400), .expired)
    }

    func testInvalidUTF8InAnAuthenticPayloadIsRefused() throws {
        let sealer = try SessionSealer(secrets: [secretA])
        let opener = try SessionOpener(sealer, context: cookie)
        var writer = ByteWriter()
        session(subject: "abc").encode(into: &writer)
        var bytes = writer.bytes
        let subjectStart = 1 + 16 + 1 + 1  // version, id, flags, length
        XCTAssertEqual(Array(bytes[subjectStart..<subjectStart + 3]), Array("abc".utf8))
        for invalid: [UInt8] in [[0xff, 0x62, 0x63], [0x61, 0xc3, 0x28], [0xed, 0xa0, 0x80]] {
            bytes.replaceSubrange(subjectStart..<subjectStart + 3, with: invalid)
            let token = try sealer.sealer.seal(bytes, context: cookie)
            XCTAssertEqual(error(opener, token), .invalidPayload)
            XCTAssertThrowsError(try sealer.open(Array(token.utf8), context: cookie, now: now))
        }
    }
}
