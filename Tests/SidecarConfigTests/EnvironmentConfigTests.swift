import Foundation
import XCTest
import SidecarConfig

/// `SIDECAR_*` variables set configuration keys, over the file's.
final class EnvironmentConfigTests: XCTestCase {
    private func environment(_ settings: [String: String]) -> [String: String] {
        Fixture.environment.merging(settings) { $1 }
    }

    // MARK: Names

    func testVariableNamesComeFromTheSchemasKeyPaths() {
        XCTAssertEqual(Config.environmentVariable(for: "access.allowed_email_domains"), "SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS")
        XCTAssertEqual(Config.environmentVariable(for: "upstream"), "SIDECAR_UPSTREAM")
        let keys = Set(Config.keyPaths)
        for key in ["listen", "upstream", "apple.team_id", "apple.private_key", "apple.private_key_file",
                    "session.secrets", "session.lifetime", "limits.max_body_bytes", "access.public_paths",
                    "revocations.password", "routes.prefix", "pages.sign_in"] {
            XCTAssertTrue(keys.contains(key), key)
        }
        for section in ["apple", "session", "limits", "routes"] {
            XCTAssertFalse(keys.contains(section), "\(section) is a section, not a key")
        }
        let variables = Config.keyPaths.map(Config.environmentVariable(for:))
        XCTAssertEqual(Set(variables).count, variables.count, "two keys would share a variable")
    }

    /// The example documents every key: the schema must know each one it sets (with every
    /// commented-out key uncommented), and each one the schema knows must be in the example.
    func testKeyPathsMatchTheExampleFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("sidecar.yaml"), encoding: .utf8)
        let commented = try NSRegularExpression(pattern: #"^(\s*)# (\s*(?:- )?[a-z][a-z0-9_]*:( .*)?)$"#)
        // An item of a list of mappings (`- path: /x`) has its keys where the `- ` ends.
        let setting = try NSRegularExpression(pattern: #"^( *(?:- )?)([a-z][a-z0-9_]*):(?: |$)"#)
        var stack: [(indent: Int, key: String)] = []
        var paths: [String] = []
        for original in text.split(separator: "\n").map(String.init) {
            var line = original
            let whole = NSRange(line.startIndex..., in: line)
            if let match = commented.firstMatch(in: line, range: whole),
               let indent = Range(match.range(at: 1), in: line), let body = Range(match.range(at: 2), in: line) {
                line = String(line[indent]) + String(line[body])
            }
            let range = NSRange(line.startIndex..., in: line)
            guard let match = setting.firstMatch(in: line, range: range),
                  let indent = Range(match.range(at: 1), in: line), let key = Range(match.range(at: 2), in: line) else { continue }
            let depth = line[indent].count
            while let last = stack.last, last.indent >= depth { stack.removeLast() }
            // The keys of a named map are the operator's names: the schema calls each `<name>`.
            let named = stack.last.map { ConfigurationDocTests.namedMaps.contains($0.key) } ?? false
            stack.append((depth, named ? "<name>" : String(line[key])))
            paths.append(stack.map(\.key).joined(separator: "."))
        }
        let leaves = Set(paths.filter { path in !paths.contains { $0.hasPrefix(path + ".") } })
        XCTAssertEqual(leaves.subtracting(Config.keyPaths).sorted(), [], "in the example, unknown to the schema")
        // apple.private_key excludes private_key_file, so the example shows it commented out.
        XCTAssertTrue(text.contains("# private_key: env:"))
        XCTAssertEqual(Set(Config.keyPaths).subtracting(leaves).sorted(), [],
                       "known to the schema, missing from the example")
    }

    // MARK: Overriding

    func testTheEnvironmentOverridesTheFile() throws {
        let yaml = Fixture.minimal + "limits:\n  max_body_bytes: 16KiB\n"
        let config = try parse(yaml, environment: environment(["SIDECAR_LIMITS_MAX_BODY_BYTES": "32KiB",
                                                               "SIDECAR_SESSION_LIFETIME": "7d"]))
        XCTAssertEqual(config.limits.maxBodyBytes, 32 << 10)
        XCTAssertEqual(config.session.lifetime, .days(7))
        XCTAssertEqual(config.environment.map(\.description), [
            "limits.max_body_bytes = 32KiB (from SIDECAR_LIMITS_MAX_BODY_BYTES, overriding line 12)",
            "session.lifetime = 7d (from SIDECAR_SESSION_LIFETIME)",
        ])
    }

    func testListsAreCommaSeparatedAndBooleansAreTrueOrFalse() throws {
        let config = try parse(Fixture.minimal + "access:\n  public_paths: [/from-the-file]\n", environment: environment([
            "SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS": "example.com, corp.example",
            "SIDECAR_ACCESS_PUBLIC_PATHS": "/healthz,/static/**",
            "SIDECAR_TRUSTED_PROXIES": "10.0.0.0/8",
            "SIDECAR_PRESERVE_HOST": "true",
            "SIDECAR_PROXY_PROTOCOL": "true",
            "SIDECAR_LOG_PII": "false",
        ]))
        XCTAssertEqual(config.access.allowedEmailDomains, ["example.com", "corp.example"])
        XCTAssertEqual(config.access.publicPaths, ["/healthz", "/static/**"])
        XCTAssertEqual(config.trustedProxies.map(\.description), ["10.0.0.0/8"])
        XCTAssertTrue(config.preserveHost)
        XCTAssertTrue(config.proxyProtocol)
        XCTAssertFalse(config.log.pii)
    }

    func testABadValueNamesTheVariable() throws {
        let found = try errors(Fixture.minimal, environment: environment([
            "SIDECAR_SESSION_LIFETIME": "7x",
            "SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS": "example.com,,corp.example",
            "SIDECAR_PAGES_SIGN_IN": "yes",
            "SIDECAR_LIMITS_MAX_BODY_BYTES": "1",
        ]))
        let byPath = Dictionary(found.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(found.count, 4, "\(found)")
        XCTAssertEqual(byPath["session.lifetime"]?.description,
                       #"environment SIDECAR_SESSION_LIFETIME: session.lifetime: invalid duration "7x" (use e.g. 90s, 15m, 24h, 7d)"#)
        XCTAssertEqual(byPath["session.lifetime"]?.variable, "SIDECAR_SESSION_LIFETIME")
        XCTAssertNil(byPath["session.lifetime"]?.line)
        XCTAssertEqual(byPath["access.allowed_email_domains[1]"]?.description,
                       "environment SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS: access.allowed_email_domains[1]: empty item in a comma-separated list")
        XCTAssertEqual(byPath["pages.sign_in"]?.message, #"expected true or false, found "yes""#)
        XCTAssertEqual(byPath["limits.max_body_bytes"]?.message, #""1" is out of range (1KiB–1GiB)"#)
    }

    /// Rules between keys see a key from the environment as set, and blame its variable.
    func testKeysFromTheEnvironmentTakePartInCrossKeyRules() throws {
        let config = try parse(Fixture.minimal, environment: environment(["SIDECAR_SESSION_DOMAIN": "example.com"]))
        XCTAssertEqual(config.session.cookieName, "__Secure-sidecar", "a Domain rules out __Host-")

        let found = try errors(Fixture.minimal, environment: environment([
            "SIDECAR_SESSION_IDLE_TIMEOUT": "1h", "SIDECAR_SESSION_REFRESH_AFTER": "2h",
        ]))
        XCTAssertEqual(found.map(\.path), ["session.refresh_after"])
        XCTAssertEqual(found.first?.variable, "SIDECAR_SESSION_REFRESH_AFTER")
        XCTAssertEqual(found.first?.kind, .conflict)
    }

    /// `${NAME}` of an undefined name gives an empty value: it must not reset the file's key.
    func testAnEmptyVariableIsUnset() throws {
        let config = try parse(Fixture.minimal, environment: environment(["SIDECAR_UPSTREAM": ""]))
        XCTAssertEqual(config.upstream.description, "http://127.0.0.1:3000")
        XCTAssertEqual(config.environment, [])
    }

    // MARK: Required keys and no file

    func testARequiredKeyMayComeFromTheEnvironmentOnly() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "upstream: http://127.0.0.1:3000\n", with: "")
        XCTAssertEqual(try errors(yaml).map(\.path), ["upstream"])
        let config = try parse(yaml, environment: environment(["SIDECAR_UPSTREAM": "http://127.0.0.1:4000"]))
        XCTAssertEqual(config.upstream.description, "http://127.0.0.1:4000")
    }

    func testEverySettingFromTheEnvironmentWithoutAFile() throws {
        let settings = [
            "SIDECAR_PUBLIC_URL": "https://app.example.com",
            "SIDECAR_UPSTREAM": "http://127.0.0.1:3000",
            "SIDECAR_APPLE_TEAM_ID": "ABCDE12345",
            "SIDECAR_APPLE_CLIENT_ID": "com.example.web",
            "SIDECAR_APPLE_KEY_ID": "XYZ123ABCD",
            "SIDECAR_APPLE_PRIVATE_KEY": Fixture.pem,
            "SIDECAR_SESSION_SECRETS": "env:SIDECAR_COOKIE_SECRET, \(Base64URL.secret)",
            "SIDECAR_COOKIE_SECRET": Fixture.cookieSecret,
        ]
        let config = try Config.load(file: nil, environment: settings)
        XCTAssertEqual(config.file, "environment")
        XCTAssertEqual(config.apple.teamID, "ABCDE12345")
        XCTAssertEqual(config.apple.privateKey.source, "env:SIDECAR_APPLE_PRIVATE_KEY")
        XCTAssertEqual(config.session.secrets.map(\.source), ["env:SIDECAR_COOKIE_SECRET", "env:SIDECAR_SESSION_SECRETS"])
        XCTAssertEqual(config.warnings, [], "a secret in a variable is not an inline one")
        XCTAssertEqual(config.environment.map(\.path), [
            "apple.client_id", "apple.key_id", "apple.private_key", "apple.team_id", "public_url", "session.secrets", "upstream",
        ])
    }

    func testWithoutAFileAMissingKeyNamesItsVariable() throws {
        do {
            _ = try Config.load(file: nil, environment: ["SIDECAR_UPSTREAM": "http://127.0.0.1:3000"])
            XCTFail("loaded without public_url")
        } catch {
            let descriptions = error.errors.map(\.description)
            XCTAssertTrue(descriptions.contains(#"environment: public_url: missing required key "public_url"; set SIDECAR_PUBLIC_URL"#),
                          "\(descriptions)")
            XCTAssertTrue(descriptions.contains { $0.hasPrefix(#"environment: apple.private_key_file: missing required key "private_key_file" ("#)
                && $0.hasSuffix("; set SIDECAR_APPLE_PRIVATE_KEY_FILE") }, "\(descriptions)")
            XCTAssertTrue(error.errors.allSatisfy { $0.line == nil && $0.file == "environment" })
        }
    }

    // MARK: Secrets and other variables

    func testSecretsAreNeverShown() throws {
        let directory = try Fixture.directory(self)
        let yaml = Fixture.minimal.replacingOccurrences(of: "  private_key_file: AuthKey.p8\n", with: "")
        let config = try Config.parse(yaml: yaml, environment: environment([
            "SIDECAR_APPLE_PRIVATE_KEY": Fixture.pem,
            "SIDECAR_SESSION_SECRETS": Fixture.cookieSecret,
            "SIDECAR_REVOCATIONS_STORE": "redis://127.0.0.1:6379",
            "SIDECAR_REVOCATIONS_PASSWORD": "hunter2",
        ]), baseDirectory: directory)
        XCTAssertEqual(config.environment.map(\.description), [
            "apple.private_key = (set) (from SIDECAR_APPLE_PRIVATE_KEY)",
            "revocations.password = (set) (from SIDECAR_REVOCATIONS_PASSWORD)",
            "revocations.store = redis://127.0.0.1:6379 (from SIDECAR_REVOCATIONS_STORE)",
            "session.secrets = (set) (from SIDECAR_SESSION_SECRETS, overriding line 9)",
        ])
        XCTAssertEqual(config.revocations.password?.source, "env:SIDECAR_REVOCATIONS_PASSWORD")
        XCTAssertFalse(config.environment.description.contains("hunter2"))
        XCTAssertFalse(config.environment.description.contains(Fixture.cookieSecret))
    }

    /// Names that are no key are not settings: secrets the file refers to, the tests' own
    /// variables. Ones that look like a misspelt key (or a whole section) are worth a warning.
    func testOtherSidecarVariablesAreIgnored() throws {
        let config = try parse(Fixture.minimal, environment: environment([
            "SIDECAR_BIN": "/usr/local/bin/sidecar",
            "SIDECAR_REDIS_URL": "redis://cache:6379",
            "SIDECAR_SESION_LIFETIME": "1d",
            "SIDECAR_LIMITS": "max_body_bytes=1KiB",
            "SIDECAR_SESSION_LIFETIMES": "env:SIDECAR_COOKIE_SECRET",
        ]))
        XCTAssertEqual(config.session.lifetime, .days(7))
        XCTAssertEqual(config.limits.maxBodyBytes, 64 << 10)
        XCTAssertEqual(config.environment, [])
        XCTAssertEqual(config.warnings.map(\.description), [
            "SIDECAR_LIMITS is ignored: limits is a section, set its keys one by one, e.g. SIDECAR_LIMITS_HEADER_TIMEOUT",
            "SIDECAR_SESION_LIFETIME is ignored: no key has that name (did you mean SIDECAR_SESSION_LIFETIME?)",
            "SIDECAR_SESSION_LIFETIMES is ignored: no key has that name (did you mean SIDECAR_SESSION_LIFETIME?)",
        ])

        // A name the configuration refers to as env:NAME is a secret, however it is spelt.
        let referring = Fixture.minimal.replacingOccurrences(of: "env:SIDECAR_COOKIE_SECRET", with: "env:SIDECAR_SESSION_SECRET")
        let quiet = try parse(referring, environment: ["SIDECAR_SESSION_SECRET": Fixture.cookieSecret])
        XCTAssertEqual(quiet.warnings, [])
    }
}

private enum Base64URL {
    /// Another 32-byte secret, URL-safe base64 as `sidecar secret` prints.
    static let secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
}
