import Foundation
import XCTest
import SidecarConfig

/// The commented example at the repository root (included in the README) must load, and it
/// must document the real defaults.
final class ExampleConfigTests: XCTestCase {
    private var exampleText: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            return try String(contentsOf: root.appendingPathComponent("sidecar.yaml"), encoding: .utf8)
        }
    }

    private func load(_ text: String, preparing directory: String, environment: [String: String] = Fixture.environment) throws -> Config {
        try FileManager.default.copyItem(atPath: directory + "/AuthKey.p8", toPath: directory + "/AuthKey_XYZ123ABCD.p8")
        return try Config.parse(yaml: text, file: "sidecar.yaml", environment: environment, baseDirectory: directory)
    }

    func testExampleLoadsAndMatchesTheDefaults() throws {
        let directory = try Fixture.directory(self)
        let example = try load(try exampleText, preparing: directory)
        let minimal = try Config.parse(yaml: Fixture.minimal.replacingOccurrences(of: "listen: 0.0.0.0:8080\n", with: ""),
                                       environment: Fixture.environment, baseDirectory: directory)

        XCTAssertEqual(example.listen, minimal.listen)
        XCTAssertEqual(example.trustedProxies, minimal.trustedProxies)
        XCTAssertEqual(example.proxyProtocol, minimal.proxyProtocol)
        XCTAssertEqual(example.workers, minimal.workers)
        XCTAssertNil(example.tls)
        XCTAssertEqual(example.publicURL, minimal.publicURL)
        XCTAssertEqual(example.upstream, minimal.upstream)
        XCTAssertEqual(example.upstreamTimeout, minimal.upstreamTimeout)
        XCTAssertEqual(example.upstreamConnectTimeout, minimal.upstreamConnectTimeout)
        XCTAssertEqual(example.preserveHost, minimal.preserveHost)
        XCTAssertEqual(example.routes, minimal.routes)
        XCTAssertEqual(example.apple.scopes, minimal.apple.scopes)
        XCTAssertEqual(example.apple.nativeAudiences, minimal.apple.nativeAudiences)
        XCTAssertEqual(example.apple.nativeRequireNonce, minimal.apple.nativeRequireNonce)
        XCTAssertEqual(example.apple.androidPackages, minimal.apple.androidPackages)
        XCTAssertEqual(example.apple.baseURL, minimal.apple.baseURL)
        XCTAssertEqual(example.apple.jwksRefresh, minimal.apple.jwksRefresh)
        XCTAssertEqual(example.apple.clientSecretTTL, minimal.apple.clientSecretTTL)
        XCTAssertEqual(example.apple.leeway, minimal.apple.leeway)
        XCTAssertEqual(example.apple.pkce, minimal.apple.pkce)
        XCTAssertEqual(example.apple.privateKeyFile, directory + "/AuthKey_XYZ123ABCD.p8")
        XCTAssertEqual(example.session.cookieName, minimal.session.cookieName)
        XCTAssertEqual(example.session.domain, minimal.session.domain)
        XCTAssertEqual(example.session.lifetime, minimal.session.lifetime)
        XCTAssertEqual(example.session.idleTimeout, minimal.session.idleTimeout)
        XCTAssertEqual(example.session.refreshAfter, minimal.session.refreshAfter)
        XCTAssertEqual(example.session.revalidate, minimal.session.revalidate)
        XCTAssertEqual(example.session.secrets.map(\.bytes), minimal.session.secrets.map(\.bytes))
        XCTAssertEqual(example.session.secrets.map(\.source), minimal.session.secrets.map(\.source))
        XCTAssertEqual(example.access, minimal.access)
        XCTAssertEqual(example.headers, minimal.headers)
        XCTAssertEqual(example.assertion, minimal.assertion)
        XCTAssertEqual(example.notifications, minimal.notifications)
        XCTAssertEqual(example.revocations, minimal.revocations)
        XCTAssertEqual(example.admin, minimal.admin)
        XCTAssertEqual(example.pages, minimal.pages)
        XCTAssertEqual(example.log, minimal.log)
        XCTAssertEqual(example.limits, minimal.limits)
        XCTAssertEqual(example.warnings, [])
    }

    /// Uncommenting every commented-out setting must still give a valid configuration: the
    /// optional keys are spelled right and their sample values are valid together.
    func testExampleWithEveryOptionalKeyUncommentedLoads() throws {
        let directory = try Fixture.directory(self)
        try FileManager.default.createDirectory(atPath: directory + "/tls", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/pages", withIntermediateDirectories: true)
        for file in ["tls/cert.pem", "tls/key.pem", "emulator-ca.pem", "redis-ca.pem", "collector-ca.pem", "ca.pem",
                     "app-ca.pem", "client.pem", "client.key", "api-ca.pem", "mapping.csv"] {
            try "PEM".write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
        }
        try String(repeating: "t", count: 43).write(toFile: directory + "/admin-token", atomically: true, encoding: .utf8)
        let setting = try NSRegularExpression(pattern: #"^(\s*)# (\s*(?:- )?[a-z_]+:( .*)?)$"#)
        var uncommented = 0
        var text = try exampleText.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let line = String(line)
            let range = NSRange(line.startIndex..., in: line)
            guard let match = setting.firstMatch(in: line, range: range),
                  let indent = Range(match.range(at: 1), in: line), let body = Range(match.range(at: 2), in: line) else {
                return line
            }
            uncommented += 1
            return String(line[indent]) + String(line[body])
        }.joined(separator: "\n")
        XCTAssertEqual(uncommented, 116)
        // apple.private_key is the alternative to private_key_file: loaded on its own.
        let keyLines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let keyLine = try XCTUnwrap(keyLines.first { $0.hasPrefix("  private_key: ") })
        let withKey = try Config.parse(
            yaml: Fixture.minimal.replacingOccurrences(of: "  private_key_file: AuthKey.p8", with: keyLine),
            environment: Fixture.environment.merging(["SIDECAR_APPLE_KEY": Fixture.pem]) { $1 }, baseDirectory: directory)
        XCTAssertEqual(withKey.apple.privateKey.source, "env:SIDECAR_APPLE_KEY")
        text = keyLines.filter { $0 != keyLine }.joined(separator: "\n")
        // The upstreams' TLS keys belong to https:// upstreams.
        text = text.replacingOccurrences(of: "upstream: http://127.0.0.1:3000", with: "upstream: https://127.0.0.1:3000")
            .replacingOccurrences(of: "url: http://127.0.0.1:9001", with: "url: https://127.0.0.1:9001")
        // tls.acme is the alternative to tls.cert_file and key_file: each is loaded on its own.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let acmeStart = lines.firstIndex(where: { $0.hasPrefix("  acme:") }) else { return XCTFail("no tls.acme block") }
        let acmeEnd = lines[(acmeStart + 1)...].firstIndex { !$0.hasPrefix("    ") && !$0.hasPrefix("      ") } ?? lines.endIndex
        let withACME = (lines[..<acmeStart].filter { !$0.hasPrefix("  cert_file:") && !$0.hasPrefix("  key_file:") }
            + lines[acmeStart...]).joined(separator: "\n")
        try FileManager.default.copyItem(atPath: directory + "/AuthKey.p8", toPath: directory + "/AuthKey_XYZ123ABCD.p8")
        let acme = try XCTUnwrap(try Config.parse(yaml: withACME, file: "sidecar.yaml", environment: Fixture.environment.merging(
            ["SIDECAR_REDIS_PASSWORD": "pw", "SIDECAR_SENTINEL_PASSWORD": "sentinel-pw", "ACME_EAB_HMAC_KEY": "c2VjcmV0"]) { $1 },
            baseDirectory: directory).acme)
        XCTAssertEqual(acme.domains, ["app.example.com"])
        XCTAssertEqual(acme.eabKeyID, "kid-1")
        let withFiles = (lines[..<acmeStart] + lines[acmeEnd...]).joined(separator: "\n")
        try FileManager.default.removeItem(atPath: directory + "/AuthKey_XYZ123ABCD.p8")

        let config = try load(withFiles, preparing: directory,
                              environment: Fixture.environment.merging(
                                  ["SIDECAR_REDIS_PASSWORD": "pw", "SIDECAR_SENTINEL_PASSWORD": "sentinel-pw"]) { $1 })
        XCTAssertEqual(config.tls?.certFile, directory + "/tls/cert.pem")
        XCTAssertEqual(config.apple.caFile, directory + "/emulator-ca.pem")
        XCTAssertEqual(config.session.domain, "example.com")
        XCTAssertEqual(config.session.cookieName, "__Secure-sidecar")
        XCTAssertEqual(config.session.refreshAfter, .hours(1), "the sample value is the default for the sample idle_timeout")
        XCTAssertEqual(config.session.cacheEntries, 8192, "the sample value is the default")
        XCTAssertEqual(config.assertion.privateKeyFile, directory + "/assertion.pem")
        XCTAssertEqual(config.notifications.forwardTo?.description, "http://127.0.0.1:3000/hooks/apple")
        XCTAssertEqual(config.pages.templates, directory + "/pages/")
        XCTAssertEqual(config.revocations.password?.source, "env:SIDECAR_REDIS_PASSWORD")
        XCTAssertEqual(config.revocations.sentinelPassword?.source, "env:SIDECAR_SENTINEL_PASSWORD")
        XCTAssertEqual(config.revocations.keyPrefix, "sidecar:")
        XCTAssertEqual(config.revocations.caFile, directory + "/redis-ca.pem")
        XCTAssertEqual(config.revocations.maxSingleUseKeys, 100_000)
        XCTAssertEqual(config.tracing.otlpEndpoint?.description, "http://127.0.0.1:4318/v1/traces")
        XCTAssertEqual(config.upstreams.map(\.name), ["api", "app", "admin", "shop"], "the sites' upstreams follow")
        XCTAssertEqual(config.upstreams.map(\.maxConnections), [64, 0, 0, 0])
        XCTAssertEqual(config.sites.map(\.hosts), [["app.example.com"], ["admin.example.com"], ["shop.example.org"]])
        XCTAssertEqual(config.sites.last?.publicURL?.origin, "https://shop.example.org")
        XCTAssertEqual(config.sites.last?.rules?.count, 4)
        XCTAssertEqual(config.sites.last?.pages?.language, .french)
        XCTAssertEqual(config.defaultSite, "app")
        XCTAssertEqual(config.rules.map(\.path), ["/admin/**", "/api/**", "/static/**", "/internal/**"])
        XCTAssertEqual(config.rules[0].methods, ["GET", "POST"])
        XCTAssertEqual(config.rules[1].upstream, "api")
        XCTAssertEqual(config.warnings.filter { $0.path.hasPrefix("rules") || $0.path.hasPrefix("upstreams") }, [])
        XCTAssertEqual(config.tracing.otlpCAFile, directory + "/collector-ca.pem")
    }
}
