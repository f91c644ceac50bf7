import Foundation
import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarStore
import XCTest

@testable import SidecarProxy

/// The assertion on the request path: signed once per session per ttl per worker,
/// kept on the cached session as a ready header field, renewed after three quarters of the ttl.
final class AssertionInjectionTests: XCTestCase {
    private static let secret = Base64.encode([UInt8](repeating: 0x33, count: 32))

    private func config(assertion: String) throws -> Config {
        try AuthTestConfig.parse(secret: Self.secret, extra: assertion)
    }

    private static func json(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    private static let enabled = "assertion:\n  enabled: true\n  audience: my-app\n  ttl: 60s\n"

    private func authenticator(_ settings: AuthSettings) throws -> Authenticator {
        try AuthTestConfig.authenticator(settings)
    }

    private let session = Session(
        id: [UInt8](repeating: 9, count: 16), subject: "001234.abcdef", email: "a@example.com", emailVerified: true,
        privateEmail: false, name: nil, issuedAt: 1_000, expiresAt: 2_000_000_000, idleDeadline: 1_900_000_000,
        lastRevalidation: 1_000, appleRefreshToken: nil)

    private func field(_ auth: Authenticator, cookie: String, now: Int64) throws -> [UInt8] {
        let text = "GET / HTTP/1.1\r\nHost: app\r\nCookie: \(auth.settings.cookieName)=\(cookie)\r\n\r\n"
        let head = try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8)))
        var identity = RequestIdentity()
        auth.sessions.identify(head, now: now, into: &identity)
        let opened = try XCTUnwrap(identity.opened)
        XCTAssertGreaterThanOrEqual(ForwardedIdentity.bound(identity), opened.assertionField.count)
        return opened.assertionField
    }

    private func claims(_ field: [UInt8]) throws -> (kid: String, jti: String, iat: Int64) {
        let text = String(decoding: field, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("X-Auth-Assertion: ") && text.hasSuffix("\r\n"), text)
        let token = text.dropFirst("X-Auth-Assertion: ".count).dropLast(2).split(separator: ".")
        XCTAssertEqual(token.count, 3)
        func object(_ part: Substring) throws -> [String: JSONValue] {
            try XCTUnwrap(try Self.json(try XCTUnwrap(Base64URL.decode(part))).objectValue)
        }
        let header = try object(token[0]), payload = try object(token[1])
        return (try XCTUnwrap(header["kid"]?.stringValue), try XCTUnwrap(payload["jti"]?.stringValue),
                try XCTUnwrap(payload["iat"]?.integerValue))
    }

    func testSignedOncePerTTLAndSharedByEveryCookieOfTheSession() throws {
        let settings = try AuthSettings(config: config(assertion: Self.enabled), shared: AuthShared())
        let auth = try authenticator(settings)
        defer { auth.stop() }
        let cookie = try settings.sessions.sealSession(session, cookieName: settings.cookieName)
        let first = try field(auth, cookie: cookie, now: 1_500)
        XCTAssertEqual(try field(auth, cookie: cookie, now: 1_544), first, "signed again within the ttl")
        // Another seal of the same session (a re-sealed cookie, a bearer copy) reuses the signature.
        let resealed = try settings.sessions.sealSession(session, cookieName: settings.cookieName)
        XCTAssertNotEqual(resealed, cookie)
        XCTAssertEqual(try field(auth, cookie: resealed, now: 1_544), first)
        // Three quarters of 60 s later a new signature: same key, new jti and iat.
        let renewed = try field(auth, cookie: cookie, now: 1_545)
        XCTAssertNotEqual(renewed, first)
        let (old, new) = (try claims(first), try claims(renewed))
        XCTAssertEqual(old.kid, new.kid)
        XCTAssertEqual(old.kid, settings.assertion?.signer.key.keyID)
        XCTAssertNotEqual(old.jti, new.jti)
        XCTAssertEqual(new.iat, 1_545)
    }

    func testAReloadWithANewKeyEmptiesTheCacheAndSignsWithIt() throws {
        let shared = AuthShared()
        let settings = try AuthSettings(config: config(assertion: Self.enabled), shared: shared)
        let auth = try authenticator(settings)
        defer { auth.stop() }
        let cookie = try settings.sessions.sealSession(session, cookieName: settings.cookieName)
        let before = try claims(try field(auth, cookie: cookie, now: 1_500))

        let directory = NSTemporaryDirectory() + "assertion-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let keyFile = directory + "/key.pem"
        let newKey = try P256PrivateKey.generate()
        try newKey.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        let rotated = try AuthSettings(
            config: config(assertion: Self.enabled + "  private_key_file: \(keyFile)\n"), shared: shared)
        try auth.apply(rotated)
        let after = try claims(try field(auth, cookie: cookie, now: 1_501))
        XCTAssertEqual(after.kid, AssertionKey(newKey).keyID)
        XCTAssertNotEqual(after.kid, before.kid)
        // The key set lists the new key, then the previous one.
        let set = try XCTUnwrap(try Self.json(try XCTUnwrap(rotated.assertion?.jwks)).objectValue?["keys"])
        guard case .array(let keys) = set else { return XCTFail("keys") }
        XCTAssertEqual(keys.compactMap { $0.objectValue?["kid"]?.stringValue }, [after.kid, before.kid])
    }

    func testOffMeansNoFieldAndNoFurtherChecks() throws {
        let settings = try AuthSettings(config: config(assertion: ""), shared: AuthShared())
        let auth = try authenticator(settings)
        defer { auth.stop() }
        XCTAssertNil(settings.assertion)
        let cookie = try settings.sessions.sealSession(session, cookieName: settings.cookieName)
        XCTAssertEqual(try field(auth, cookie: cookie, now: 1_500), [])
        let text = "GET / HTTP/1.1\r\nHost: app\r\nCookie: \(settings.cookieName)=\(cookie)\r\n\r\n"
        var identity = RequestIdentity()
        auth.sessions.identify(try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8))), now: 1_501, into: &identity)
        XCTAssertEqual(identity.opened?.assertionRenewAt, .max)
    }
}
