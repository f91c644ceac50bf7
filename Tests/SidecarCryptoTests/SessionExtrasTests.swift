import XCTest
@testable import SidecarCrypto

/// `Session.extras` (what the id_token said beyond the identity) travels under the flags byte's
/// last bit, so a session without extras seals exactly as before and older values still open.
final class SessionExtrasTests: XCTestCase {
    private let cookie = "__Host-sidecar"
    private let secret = [UInt8](repeating: 0x5c, count: 32)

    private func session(_ extras: SessionExtras = SessionExtras()) -> Session {
        var session = Session(id: Array(0..<16), subject: "000739.90ab72d5c78444a9bdf1a3fb80ff6660.2105", email: "a@b.c",
                              emailVerified: true, privateEmail: false, name: nil, issuedAt: 100, expiresAt: 10_000,
                              idleDeadline: 5_000, lastRevalidation: 100, appleRefreshToken: nil)
        session.extras = extras
        return session
    }

    func testEachExtraRoundTripsAloneAndTogether() throws {
        let sealer = try SessionSealer(secrets: [secret])
        for extras in [
            SessionExtras(transferSubject: "001111.aaaa.0001"), SessionExtras(previousUserID: "legacy-7"),
            SessionExtras(realUserStatus: 0), SessionExtras(realUserStatus: 2), SessionExtras(authTime: 1_700_000_000),
            SessionExtras(transferSubject: "t", previousUserID: "p", realUserStatus: 1, authTime: -5),
        ] {
            let original = session(extras)
            let token = try sealer.sealSession(original, cookieName: cookie)
            XCTAssertEqual(try sealer.open(Array(token.utf8), context: cookie, now: 200).payload, original)
            let fields = try original.encoded.withUnsafeBufferPointer { try Session(SessionFields(parsing: $0)) }
            XCTAssertEqual(fields, original, "read in place as decoded")
        }
    }

    func testASessionWithoutExtrasEncodesAsBefore() {
        var before = ByteWriter()
        let old = session()
        before.write(Session.formatVersion)
        before.write(raw: old.id)
        before.write(UInt8(1 << 0 | 1 << 2))
        before.write(old.subject, wide: false)
        before.write("a@b.c", wide: true)
        for time in [old.issuedAt, old.expiresAt, old.idleDeadline, old.lastRevalidation] { before.write(time) }
        XCTAssertEqual(old.encoded, before.bytes)
    }

    func testOutOfRangeExtrasAreNeitherSealedNorOpened() throws {
        let sealer = try SessionSealer(secrets: [secret])
        for extras in [SessionExtras(transferSubject: ""), SessionExtras(previousUserID: String(repeating: "a", count: 256)),
                       SessionExtras(realUserStatus: 3)] {
            XCTAssertThrowsError(try sealer.sealSession(session(extras), cookieName: cookie))
        }
        var bytes = session(SessionExtras(realUserStatus: 1)).encoded
        bytes[bytes.count - 1] = 3  // real_user_status 3
        XCTAssertThrowsError(try bytes.withUnsafeBufferPointer { try SessionFields(parsing: $0) })
        bytes = session(SessionExtras(realUserStatus: 1)).encoded
        bytes[bytes.count - 2] = 0  // an extras flags byte naming nothing
        bytes.removeLast()
        XCTAssertThrowsError(try bytes.withUnsafeBufferPointer { try SessionFields(parsing: $0) })
        bytes = session(SessionExtras(realUserStatus: 1)).encoded
        bytes[bytes.count - 2] = 0x10  // an unknown extra
        XCTAssertThrowsError(try bytes.withUnsafeBufferPointer { try SessionFields(parsing: $0) })
    }
}
