import XCTest
@testable import SidecarCrypto

/// `Session.appleClientID` (a native app's bundle id, for refresh and revoke) travels under a
/// flag of its own, so sessions sealed before it existed still open, and web sessions do not grow.
final class SessionClientIDTests: XCTestCase {
    private let cookie = "__Host-sidecar"
    private let secret = [UInt8](repeating: 0x5c, count: 32)

    private func session(clientID: String?) -> Session {
        Session(id: Array(0..<16), subject: "000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105", email: nil,
                emailVerified: false, privateEmail: false, name: nil, issuedAt: 100, expiresAt: 10_000,
                idleDeadline: 5_000, lastRevalidation: 100, appleRefreshToken: "r.native", appleClientID: clientID)
    }

    func testRoundTripWithAndWithoutAClientID() throws {
        let sealer = try SessionSealer(secrets: [secret])
        for original in [session(clientID: "com.example.ios"), session(clientID: nil)] {
            let token = try sealer.sealSession(original, cookieName: cookie)
            XCTAssertEqual(try sealer.open(Array(token.utf8), context: cookie, now: 200).payload, original)
        }
    }

    func testAWebSessionEncodesExactlyAsBefore() {
        var withField = ByteWriter(), before = ByteWriter()
        session(clientID: nil).encode(into: &withField)
        // The format before the field: the same bytes (flags without bit 5, nothing appended).
        let old = session(clientID: nil)
        before.write(Session.formatVersion)
        before.write(raw: old.id)
        before.write(UInt8(1 << 4))
        before.write(old.subject, wide: false)
        for time in [old.issuedAt, old.expiresAt, old.idleDeadline, old.lastRevalidation] { before.write(time) }
        before.write("r.native", wide: true)
        XCTAssertEqual(withField.bytes, before.bytes)
        XCTAssertEqual(try decode(before.bytes), old)
    }

    func testEmptyOrOversizedClientIDsAreNotSealedNorOpened() throws {
        let sealer = try SessionSealer(secrets: [secret])
        XCTAssertThrowsError(try sealer.sealSession(session(clientID: ""), cookieName: cookie))
        XCTAssertThrowsError(try sealer.sealSession(session(clientID: String(repeating: "a", count: 256)), cookieName: cookie))
        var writer = ByteWriter()
        session(clientID: "x").encode(into: &writer)
        var bytes = writer.bytes
        bytes[bytes.count - 2] = 0  // the client id's length byte, then drop its one character
        bytes.removeLast()
        XCTAssertThrowsError(try decode(bytes)) { XCTAssertEqual($0 as? SealedOpenError, .invalidPayload) }
    }

    private func decode(_ bytes: [UInt8]) throws -> Session {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = ByteReader(buffer)
            let session = try Session(from: &reader)
            XCTAssertTrue(reader.isAtEnd)
            return session
        }
    }
}
