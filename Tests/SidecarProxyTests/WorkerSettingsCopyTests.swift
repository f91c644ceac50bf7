import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarStore
import XCTest

@testable import SidecarProxy

/// Each worker reads the sign-in settings through an object of its own (reference counts the
/// request path writes stay on its core), with the same values and the same shared parts.
final class WorkerSettingsCopyTests: XCTestCase {
    private static let secret = Base64.encode([UInt8](repeating: 0x33, count: 32))

    private func config() throws -> Config {
        try AuthTestConfig.parse(
            secret: Self.secret, publicURL: "https://app.example.com",
            session: ["cookie_name: __Host-worker", "revalidate: 10m", "cache_entries: 512"],
            extra: "headers:\n  user_id: X-Who\n  email: X-Mail\n  pass_cookie: true\n")
    }

    private func storage(_ bytes: [UInt8]) -> UnsafeRawPointer? {
        bytes.withUnsafeBytes { $0.baseAddress }
    }

    func testTheCopyIsAnObjectOfItsOwnWithItsOwnByteArrays() throws {
        let original = try AuthSettings(config: config(), shared: AuthShared())
        let copy = AuthSettings(workerCopyOf: original)
        XCTAssertFalse(copy === original)
        XCTAssertEqual(copy.cookieNameBytes, Array("__Host-worker".utf8))
        XCTAssertNotEqual(storage(copy.cookieNameBytes), storage(original.cookieNameBytes))
        XCTAssertFalse(copy.headers === original.headers)
        for (mine, theirs) in [
            (copy.headers.userID, original.headers.userID), (copy.headers.email, original.headers.email),
            (copy.headers.emailVerified, original.headers.emailVerified),
            (copy.headers.privateEmail, original.headers.privateEmail), (copy.headers.name, original.headers.name),
        ] {
            XCTAssertEqual(mine, theirs)
            XCTAssertNotEqual(storage(mine), storage(theirs))
        }
        XCTAssertEqual(copy.headers.userID, Array("X-Who".utf8))
    }

    func testTheCopyKeepsEveryValueAndTheSharedParts() throws {
        let original = try AuthSettings(config: config(), shared: AuthShared())
        let copy = AuthSettings(workerCopyOf: original)
        XCTAssertTrue(copy.shared === original.shared)
        XCTAssertTrue(copy.secrets === original.secrets)
        XCTAssertEqual(copy.cookieName, original.cookieName)
        XCTAssertEqual(copy.publicOrigin, "https://app.example.com")
        XCTAssertEqual(copy.redirectURI, original.redirectURI)
        XCTAssertEqual(copy.revalidateSeconds, 600)
        XCTAssertEqual(copy.sessionCacheEntries, 512)
        XCTAssertEqual(copy.passCookie, true)
        XCTAssertEqual(copy.lifetime, original.lifetime)
        XCTAssertEqual(copy.idleTimeout, original.idleTimeout)
        XCTAssertEqual(copy.loginCookiePrefix, original.loginCookiePrefix)
        XCTAssertEqual(copy.secureCookies, original.secureCookies)
    }

    func testAWorkersOptionsHoldItsOwnSettingsAndTheRestUnchanged() throws {
        let config = try config()
        var shared = ProxyOptions(config: config)
        shared.auth = try AuthSettings(config: config, shared: AuthShared())
        let mine = Worker.workerCopy(of: shared)
        let auth = try XCTUnwrap(mine.auth)
        XCTAssertFalse(auth === shared.auth)
        XCTAssertEqual(auth.cookieNameBytes, shared.auth?.cookieNameBytes)
        XCTAssertEqual(mine.upstreamTimeoutMs, shared.upstreamTimeoutMs)
        XCTAssertEqual(mine.config.workers, shared.config.workers)
        var without = shared
        without.auth = nil
        XCTAssertNil(Worker.workerCopy(of: without).auth)
    }

    /// A session sealed with the shared settings' sealer is accepted through the copy, with the
    /// configured header names.
    func testAnAuthenticatorOnTheCopyAcceptsTheSessionsOfTheOriginal() throws {
        let original = try AuthSettings(
            config: config(), shared: AuthShared(store: MemoryStore(clock: StoreClock { 1_500 })))
        let copy = AuthSettings(workerCopyOf: original)
        let auth = try AuthTestConfig.authenticator(copy)
        defer { auth.stop() }
        let session = Session(
            id: [UInt8](repeating: 9, count: 16), subject: "001234.copy", email: "a@example.com", emailVerified: true,
            privateEmail: false, name: nil, issuedAt: 1_000, expiresAt: 2_000_000_000, idleDeadline: 1_900_000_000,
            lastRevalidation: 1_400, appleRefreshToken: nil)
        let value = try original.sessions.sealSession(session, cookieName: original.cookieName)
        let head = try XCTUnwrap(try HTTPRequestHead.parse(
            Array("GET / HTTP/1.1\r\nHost: app\r\nCookie: \(original.cookieName)=\(value)\r\n\r\n".utf8)))
        var identity = RequestIdentity()
        auth.sessions.identify(head, now: 1_500, into: &identity)
        let opened = try XCTUnwrap(identity.opened)
        let fields = opened.withIdentityFields { String(decoding: $0, as: UTF8.self) }
        XCTAssertTrue(fields.contains("X-Who: 001234.copy\r\n"), fields)
        XCTAssertTrue(fields.contains("X-Mail: a@example.com\r\n"), fields)
    }
}
