import XCTest
import SidecarConfig

final class DefaultsTests: XCTestCase {
    func testMinimalConfigGetsEveryDocumentedDefault() throws {
        let config = try parse(Fixture.minimal)

        XCTAssertEqual(config.listen, .tcp(host: "0.0.0.0", port: 8080))
        XCTAssertEqual(config.trustedProxies, [])
        XCTAssertFalse(config.proxyProtocol)
        XCTAssertNil(config.tls)
        XCTAssertGreaterThanOrEqual(config.workers, 1)
        XCTAssertLessThanOrEqual(config.workers, 256)
        XCTAssertEqual(config.publicURL.origin, "https://app.example.com")
        XCTAssertEqual(config.upstream, .http(host: "127.0.0.1", port: 3000, basePath: ""))
        XCTAssertEqual(config.upstreamTimeout, .seconds(60))
        XCTAssertEqual(config.upstreamConnectTimeout, .seconds(5))
        XCTAssertFalse(config.preserveHost)
        XCTAssertEqual(config.routes.prefix, "/.auth")
        XCTAssertEqual(config.redirectURI, "https://app.example.com/.auth/callback")

        XCTAssertEqual(config.apple.teamID, "ABCDE12345")
        XCTAssertEqual(config.apple.clientID, "com.example.web")
        XCTAssertEqual(config.apple.keyID, "XYZ123ABCD")
        XCTAssertTrue(config.apple.privateKeyFile?.hasSuffix("/AuthKey.p8") ?? false)
        XCTAssertEqual(config.apple.privateKey.string, Fixture.pem)
        XCTAssertEqual(config.apple.scopes, ["name", "email"])
        XCTAssertEqual(config.apple.nativeAudiences, [])
        XCTAssertEqual(config.apple.baseURL.description, "https://appleid.apple.com")
        XCTAssertNil(config.apple.caFile)
        XCTAssertEqual(config.apple.jwksRefresh, .hours(1))
        XCTAssertEqual(config.apple.clientSecretTTL, .hours(1))
        XCTAssertEqual(config.apple.leeway, .seconds(60))
        XCTAssertTrue(config.apple.pkce)
        XCTAssertFalse(config.apple.nativeRequireNonce)
        XCTAssertEqual(config.apple.androidPackages, [])

        XCTAssertEqual(config.session.cookieName, "__Host-sidecar")
        XCTAssertNil(config.session.domain)
        XCTAssertTrue(config.session.secure)
        XCTAssertEqual(config.session.lifetime, .days(7))
        XCTAssertEqual(config.session.idleTimeout, .hours(24))
        XCTAssertEqual(config.session.refreshAfter, .hours(1))
        XCTAssertEqual(config.session.revalidate, .hours(24))
        XCTAssertEqual(config.session.secrets.map(\.bytes.count), [32])
        XCTAssertEqual(config.session.secrets.first?.source, "env:SIDECAR_COOKIE_SECRET")

        XCTAssertEqual(config.access.allowedEmails, [])
        XCTAssertEqual(config.access.allowedEmailDomains, [])
        XCTAssertEqual(config.access.allowedSubjects, [])
        XCTAssertTrue(config.access.allowPrivateRelay)
        XCTAssertEqual(config.access.publicPaths, [])
        XCTAssertEqual(config.access.apiPaths, [])
        XCTAssertEqual(config.access.allowedRedirectHosts, [])

        XCTAssertEqual(config.headers.userID, "X-Auth-User-Id")
        XCTAssertEqual(config.headers.email, "X-Auth-Email")
        XCTAssertEqual(config.headers.emailVerified, "X-Auth-Email-Verified")
        XCTAssertEqual(config.headers.privateEmail, "X-Auth-Private-Email")
        XCTAssertEqual(config.headers.name, "X-Auth-Name")
        XCTAssertEqual(config.headers.assertion, "X-Auth-Assertion")
        XCTAssertEqual(config.headers.strip, [])
        XCTAssertFalse(config.headers.passCookie)

        XCTAssertFalse(config.assertion.enabled)
        XCTAssertNil(config.assertion.privateKeyFile)
        XCTAssertEqual(config.assertion.audience, "https://app.example.com")
        XCTAssertEqual(config.assertion.ttl, .seconds(60))

        XCTAssertNil(config.notifications.forwardTo)
        XCTAssertEqual(config.revocations.store, .memory)
        XCTAssertEqual(config.admin.listen, .tcp(host: "127.0.0.1", port: 9090))

        XCTAssertEqual(config.log.format, .json)
        XCTAssertEqual(config.log.level, .info)
        XCTAssertTrue(config.log.access)
        XCTAssertFalse(config.log.pii)

        XCTAssertEqual(config.limits.maxHeaderBytes, 16 * 1024)
        XCTAssertEqual(config.limits.maxBodyBytes, 64 * 1024)
        XCTAssertEqual(config.limits.maxUploadBytes, 0)
        XCTAssertEqual(config.limits.headerTimeout, .seconds(10))
        XCTAssertEqual(config.limits.idleTimeout, .seconds(60))
        XCTAssertEqual(config.limits.maxConnections, 10_000)

        XCTAssertEqual(config.warnings, [])
    }

    func testListenDefaultsToLoopback() throws {
        let config = try parse(Fixture.minimal.replacingOccurrences(of: "listen: 0.0.0.0:8080\n", with: ""))
        XCTAssertEqual(config.listen, .tcp(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(config.listen.description, "127.0.0.1:8080")
    }

    func testSecretsNeverPrint() throws {
        let config = try parse(Fixture.minimal)
        let secret = try XCTUnwrap(config.session.secrets.first)
        XCTAssertEqual("\(secret)", "<secret from env:SIDECAR_COOKIE_SECRET>")
        var dumped = ""
        dump(config, to: &dumped)
        XCTAssertFalse(dumped.contains(Fixture.cookieSecret))
        XCTAssertFalse(dumped.contains("MIGTAgEAMBMG"))
        XCTAssertFalse(dumped.contains("bytes"))
    }
    /// `apple`'s keys are declared once (doc, default, parser), so `sidecar.yaml` and the
    /// reference are checked against them; the app's identity has no defaults.
    func testAppleOptionsAreDeclaredWithTheirDefaults() throws {
        let apple = Dictionary(uniqueKeysWithValues: Config.declaredKeys.filter { $0.path.hasPrefix("apple.") && !$0.path.hasPrefix("apple.transfer.") }
            .map { ($0.path, $0.defaultShown) })
        XCTAssertEqual(apple, [
            "apple.scopes": "[name, email]", "apple.native_audiences": "[]", "apple.native_require_nonce": "false",
            "apple.android_packages": "[]", "apple.base_url": "https://appleid.apple.com", "apple.ca_file": "",
            "apple.jwks_refresh": "1h", "apple.client_secret_ttl": "1h", "apple.leeway": "1m", "apple.pkce": "true",
            "apple.team_id": "", "apple.client_id": "", "apple.key_id": "", "apple.private_key_file": "",
            "apple.private_key": "",
        ])
    }
}

final class QuotingStyleTests: XCTestCase {
    /// Generated configs (e.g. by test harnesses) quote every string and write empty sections as {}.
    func testJSONQuotedScalarsAndEmptyFlowCollections() throws {
        let config = try parse("""
            "listen": "127.0.0.1:18080"
            "public_url": "http://127.0.0.1:18080"
            "upstream": "http://127.0.0.1:3000"
            "workers": 1
            "apple":
              "team_id": "TEAM123456"
              "client_id": "com.example.web"
              "key_id": "KEY123ABCD"
              "private_key_file": "AuthKey.p8"
              "base_url": "http://127.0.0.1:9999"
            "session":
              "secrets":
                - "\(Fixture.cookieSecret)"
            "access": {"public_paths": ["/**"], "api_paths": []}
            "headers": {}
            "log": {"pii": false}

            """)
        XCTAssertEqual(config.workers, 1)
        XCTAssertEqual(config.access.publicPaths, ["/**"])
        XCTAssertEqual(config.apple.teamID, "TEAM123456")
        XCTAssertEqual(config.headers.userID, "X-Auth-User-Id")
        XCTAssertEqual(config.session.cookieName, "__Host-sidecar")
        XCTAssertEqual(config.warnings.map(\.path), ["apple.base_url", "session.secrets"],
                       "plain-http emulator base_url; inline secret")
    }
}
