import XCTest
import SidecarConfig

/// Rules between keys and the warnings `sidecar check` prints.
final class CrossFieldTests: XCTestCase {
    private func replacing(_ old: String, with new: String) -> String {
        precondition(Fixture.minimal.contains(old))
        return Fixture.minimal.replacingOccurrences(of: old, with: new)
    }

    private let appleKey = "  private_key_file: AuthKey.p8\n"
    private let sessionHeader = "session:\n"

    func testPlainHTTPPublicURLOnlyOnLoopback() throws {
        let error = try errors(replacing("https://app.example.com", with: "http://app.example.com")).first
        XCTAssertEqual(error?.path, "public_url")
        XCTAssertEqual(error?.line, 2)
        XCTAssertEqual(error?.column, 13)
        XCTAssertTrue(error?.message.hasPrefix("plain http is only allowed on loopback hosts") ?? false)

        for host in ["localhost:8080", "127.0.0.1:8080", "127.8.9.10", "[::1]:8080", "app.localhost"] {
            let config = try parse(replacing("https://app.example.com", with: "http://\(host)"))
            XCTAssertTrue(config.session.secure, host)
            XCTAssertEqual(config.session.cookieName, "__Host-sidecar", host)
        }
    }

    func testPublicURLAppleCouldNeverAcceptIsAWarning() throws {
        for url in ["http://localhost:8080", "https://127.0.0.1:8443", "https://localhost"] {
            let config = try parse(replacing("https://app.example.com", with: url))
            XCTAssertEqual(config.warnings.map(\.path), ["public_url"], url)
            XCTAssertTrue(config.warnings.first?.message.contains("could never be registered with Apple") ?? false)
        }
        let emulated = try parse(replacing("https://app.example.com", with: "http://localhost:8080")
            .replacingOccurrences(of: appleKey, with: appleKey + "  base_url: http://127.0.0.1:9999\n"))
        XCTAssertEqual(emulated.warnings.map(\.path), ["apple.base_url"],
                       "no public_url warning when talking to an emulator; only that base_url is plain http")
    }

    func testClientSecretTTLAtMost180Days() throws {
        XCTAssertEqual(try parse(replacing(appleKey, with: appleKey + "  client_secret_ttl: 180d\n")).apple.clientSecretTTL,
                       .days(180))
        let error = try errors(replacing(appleKey, with: appleKey + "  client_secret_ttl: 181d\n")).first
        XCTAssertEqual(error?.path, "apple.client_secret_ttl")
        XCTAssertEqual(error?.line, 9)
        XCTAssertEqual(error?.column, 22)
        XCTAssertEqual(error?.message, #""181d" is longer than Apple's maximum of 180d"#)
    }

    func testSessionDomainChangesTheDefaultCookieName() throws {
        let session = try parse(replacing(sessionHeader, with: sessionHeader + "  domain: .Example.com\n")).session
        XCTAssertEqual(session.domain, "example.com")
        XCTAssertEqual(session.cookieName, "__Secure-sidecar")

        let named = try parse(replacing(sessionHeader, with: sessionHeader + "  domain: example.com\n  cookie_name: app_session\n"))
        XCTAssertEqual(named.session.cookieName, "app_session")
    }

    func testHostPrefixedCookieCannotHaveADomain() throws {
        let error = try errors(replacing(sessionHeader, with: sessionHeader + "  domain: example.com\n  cookie_name: __Host-app\n")).first
        XCTAssertEqual(error?.kind, .conflict)
        XCTAssertEqual(error?.path, "session.cookie_name")
        XCTAssertEqual(error?.line, 11)
        XCTAssertEqual(error?.column, 16)
        XCTAssertEqual(error?.message, "a __Host- cookie cannot have a Domain; drop session.domain or the prefix")
    }

    func testSessionDomainMustCoverPublicHost() throws {
        let error = try errors(replacing(sessionHeader, with: sessionHeader + "  domain: other.com\n")).first
        XCTAssertEqual(error?.path, "session.domain")
        XCTAssertEqual(error?.message, #"public_url's host "app.example.com" is not within "other.com": browsers would refuse the cookie"#)
        XCTAssertEqual(try errors(replacing(sessionHeader, with: sessionHeader + "  domain: ample.com\n")).first?.path,
                       "session.domain", "suffix match is on label boundaries")
    }

    func testRefreshMustComeBeforeIdleExpiry() throws {
        let error = try errors(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 1h\n  refresh_after: 2h\n")).first
        XCTAssertEqual(error?.kind, .conflict)
        XCTAssertEqual(error?.path, "session.refresh_after")
        XCTAssertEqual(error?.line, 11)
        XCTAssertEqual(error?.column, 18)
    }

    func testRefreshDefaultAdaptsToAShortIdleTimeout() throws {
        // `idle_timeout: 30m` alone was refused because refresh_after's default (1h)
        // was not shorter. A default must never make a valid setting fail.
        let short = try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 30m\n")).session
        XCTAssertEqual(short.idleTimeout, .minutes(30))
        XCTAssertEqual(short.refreshAfter, .minutes(15), "half the idle timeout when that is shorter than 1h")
        XCTAssertEqual(try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 90m\n")).session.refreshAfter,
                       .minutes(45))
        XCTAssertEqual(try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 2h\n")).session.refreshAfter,
                       .hours(1))
        XCTAssertEqual(try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 3s\n")).session.refreshAfter,
                       TimeSpan(milliseconds: 1500))
        // An explicit refresh_after is kept as written.
        let explicit = try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 30m\n  refresh_after: 5m\n"))
        XCTAssertEqual(explicit.session.refreshAfter, .minutes(5))
        XCTAssertEqual(explicit.warnings, [])
    }

    func testExplicitRefreshAgainstTheDefaultIdleTimeoutSaysSo() throws {
        let error = try errors(replacing(sessionHeader, with: sessionHeader + "  refresh_after: 25h\n")).first
        XCTAssertEqual(error?.description, "sidecar.yaml:10:18: session.refresh_after: must be shorter than "
                       + "session.idle_timeout (1d, its default), or active sessions would expire")
    }

    func testIdleLongerThanLifetimeWarnsOnlyWhenIdleIsSet() throws {
        // The default idle timeout simply yields to a shorter lifetime: nothing to warn about.
        XCTAssertEqual(try parse(replacing(sessionHeader, with: sessionHeader + "  lifetime: 12h\n")).warnings, [])
        let both = try parse(replacing(sessionHeader, with: sessionHeader + "  lifetime: 12h\n  idle_timeout: 24h\n"))
        XCTAssertEqual(both.warnings.map(\.description),
                       ["session.idle_timeout: longer than session.lifetime (12h): it never takes effect"])
        let idleOnly = try parse(replacing(sessionHeader, with: sessionHeader + "  idle_timeout: 8d\n"))
        XCTAssertEqual(idleOnly.warnings.map(\.description),
                       ["session.idle_timeout: longer than session.lifetime (7d, its default): it never takes effect"])
    }

    func testNativeAudiencesWithNonceOptionalWarnsOnlyWhenSetSo() throws {
        let byDefault = try parse(replacing(appleKey, with: appleKey + "  native_audiences: [com.example.ios]\n"))
        XCTAssertEqual(byDefault.apple.nativeAudiences, ["com.example.ios"])
        XCTAssertEqual(byDefault.warnings, [], "defaults never warn")
        let config = try parse(replacing(appleKey, with: appleKey + "  native_audiences: [com.example.ios]\n  native_require_nonce: false\n"))
        XCTAssertEqual(config.warnings.map(\.path), ["apple.native_require_nonce"])
        let strict = try parse(replacing(appleKey, with: appleKey + "  native_audiences: [com.example.ios]\n  native_require_nonce: true\n"))
        XCTAssertEqual(strict.warnings, [])
    }

    func testAndroidPackagesAreAndroidApplicationIDs() throws {
        let config = try parse(replacing(appleKey, with: appleKey + "  android_packages: [com.example.app, org.x_y.A1]\n"))
        XCTAssertEqual(config.apple.androidPackages, ["com.example.app", "org.x_y.A1"])
        for bad in ["app", "com..app", "com.1app", "com.example.app;end", "com.exa mple", "com.example.", "_com.app"] {
            let error = try errors(replacing(appleKey, with: appleKey + "  android_packages: [\"\(bad)\"]\n")).first
            XCTAssertEqual(error?.path, "apple.android_packages[0]", bad)
        }
        let twice = try errors(replacing(appleKey, with: appleKey + "  android_packages: [a.b, a.b]\n")).first
        XCTAssertEqual(twice?.message, "lists a package twice")
    }

    func testIdentityHeadersMustBeDistinct() throws {
        let error = try errors(Fixture.minimal + "headers:\n  email: x-auth-user-id\n").first
        XCTAssertEqual(error?.kind, .conflict)
        XCTAssertEqual(error?.path, "headers.email")
        XCTAssertEqual(error?.message, #""x-auth-user-id" is already used by headers.user_id"#)
        let underscore = try errors(Fixture.minimal + "headers:\n  name: X_Auth_Email\n").first
        XCTAssertEqual(underscore?.path, "headers.name", "underscore spelling is the same header once stripped")
    }

    func testIdentityHeaderTakingAnotherDefaultIsReportedWhereItWasWritten() throws {
        // user_id renamed to email's default: the error is at user_id (the operator's line),
        // not at headers.email, a key they never wrote.
        let error = try errors(Fixture.minimal + "headers:\n  user_id: X-Auth-Email\n").first
        XCTAssertEqual(error?.kind, .conflict)
        XCTAssertEqual(error?.description, "sidecar.yaml:12:12: headers.user_id: \"X-Auth-Email\" is headers.email's "
                       + "default name; set headers.email to another name too")
        let moved = try parse(Fixture.minimal + "headers:\n  user_id: X-Auth-Email\n  email: X-Auth-Mail\n").headers
        XCTAssertEqual(moved.userID, "X-Auth-Email")
        XCTAssertEqual(moved.email, "X-Auth-Mail")
    }

    func testScopesAreAppleOnes() throws {
        XCTAssertEqual(try parse(replacing(appleKey, with: appleKey + "  scopes: [email]\n")).apple.scopes, ["email"])
        XCTAssertEqual(try errors(replacing(appleKey, with: appleKey + "  scopes: [openid]\n")).first?.message,
                       #"unknown scope "openid" (Apple offers name and email)"#)
        XCTAssertEqual(try errors(replacing(appleKey, with: appleKey + "  scopes: [email, email]\n")).first?.message,
                       "lists a scope twice")
    }

    func testAppleIdentifiers() throws {
        XCTAssertEqual(try errors(replacing("team_id: ABCDE12345", with: "team_id: abcde")).first?.message,
                       #"invalid team id "abcde" (10 upper-case letters or digits, as shown by Apple)"#)
        XCTAssertEqual(try errors(replacing("client_id: com.example.web", with: "client_id: \"com example\"")).first?.path,
                       "apple.client_id")
    }

    func testTLSNeedsBothReadableFiles() throws {
        let directory = try Fixture.directory(self)
        try "cert".write(toFile: directory + "/cert.pem", atomically: true, encoding: .utf8)
        try "key".write(toFile: directory + "/key.pem", atomically: true, encoding: .utf8)
        let config = try Config.parse(yaml: Fixture.minimal + "tls:\n  cert_file: cert.pem\n  key_file: key.pem\n",
                                      environment: Fixture.environment, baseDirectory: directory)
        XCTAssertEqual(config.tls?.certFile, directory + "/cert.pem")
        XCTAssertEqual(config.tls?.keyFile, directory + "/key.pem")

        let half = try errors(Fixture.minimal + "tls:\n  cert_file: AuthKey.p8\n")
        XCTAssertEqual(half.map(\.path), ["tls.key_file"])
        XCTAssertEqual(half.first?.line, 12)
        XCTAssertEqual(half.first?.column, 3)
        let missing = try errors(Fixture.minimal + "tls:\n  cert_file: nope.pem\n  key_file: AuthKey.p8\n")
        XCTAssertEqual(missing.first?.path, "tls.cert_file")
        XCTAssertEqual(missing.first?.kind, .unresolvable)
    }

    func testAssertionSettings() throws {
        let assertion = try parse(Fixture.minimal + "assertion:\n  enabled: true\n  audience: my-app\n  ttl: 2m\n  private_key_file: assertion.pem\n").assertion
        XCTAssertTrue(assertion.enabled)
        XCTAssertEqual(assertion.audience, "my-app")
        XCTAssertEqual(assertion.ttl, .minutes(2))
        XCTAssertTrue(assertion.privateKeyFile?.hasSuffix("/assertion.pem") ?? false, "may not exist yet: generated at start")
        XCTAssertEqual(try errors(Fixture.minimal + "assertion:\n  private_key_file: /nonexistent/dir/key.pem\n").first?.message,
                       #"directory of "/nonexistent/dir/key.pem" does not exist"#)
    }
}
