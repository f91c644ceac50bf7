import XCTest
import SidecarConfig

/// `upstreams` and `rules`: what loads, what is refused (at the entry's line and column),
/// and what `check` warns about.
final class RulesConfigTests: XCTestCase {
    private let twoRules = """
        upstreams:
          api:
            url: http://127.0.0.1:9001
            upstream_timeout: 30s
            upstream_connect_timeout: 2s
        rules:
          - path: /admin/**
            allowed_emails: [Boss@Example.com]
            allow_private_relay: false
          - path: /api/**
            methods: [get, POST]
            host: API.example.com
            api: true
            upstream: api

        """

    /// A pattern requests can never be spelled as, once normalized, is a warning naming it.
    func testPatternsThatNoNormalizedPathMatchesAreWarnedAbout() throws {
        let config = try parse(minimal(plus: """
            access:
              public_paths: ["/static//**", "/ok/**"]
              api_paths: ["/api/%2e%2e/x"]
            rules:
              - path: /a%2Fb/**
                deny: true
              - path: /admin/./x
                deny: true
              - path: /admin/**
                deny: true

            """))
        let unnormalized = config.warnings.filter { $0.message.contains("can never match: requests") || $0.message.contains("no request path") }
        XCTAssertEqual(unnormalized.map(\.path), ["rules[0].path", "rules[1].path", "access.public_paths", "access.api_paths"],
                       "\(config.warnings)")
        XCTAssertTrue(unnormalized[0].message.contains("paths.encoded_slashes: reject"), unnormalized[0].message)
        XCTAssertTrue(unnormalized[1].message.contains("where it reads /admin/x"), unnormalized[1].message)
        XCTAssertEqual(unnormalized[0].line, config.rules[0].line)
    }

    func testRulesAndUpstreamsLoad() throws {
        let config = try parse(minimal(plus: twoRules))
        XCTAssertEqual(config.upstreams, [Config.NamedUpstream(
            name: "api", target: .http(host: "127.0.0.1", port: 9001, basePath: ""), timeout: .seconds(30),
            connectTimeout: .seconds(2))])
        XCTAssertEqual(config.rules.count, 2)
        XCTAssertEqual(config.rules[0].path, "/admin/**")
        XCTAssertEqual(config.rules[0].allowedEmails, ["boss@example.com"])
        XCTAssertEqual(config.rules[0].allowPrivateRelay, false)
        XCTAssertNil(config.rules[0].upstream)
        XCTAssertEqual(config.rules[0].line, 17)
        XCTAssertEqual(config.rules[1].methods, ["GET", "POST"])
        XCTAssertEqual(config.rules[1].host, "api.example.com")
        XCTAssertTrue(config.rules[1].isAPI)
        XCTAssertEqual(config.rules[1].upstream, "api")
        XCTAssertEqual(config.warnings, [])
    }

    func testCORSPreflightIsReadPerRule() throws {
        let config = try parse(minimal(plus: """
            rules:
              - path: /api/private/**
                api: true
                cors_preflight: refuse
              - path: /web/**
                cors_preflight: forward
              - path: /api/**
                api: true

            """))
        XCTAssertEqual(config.rules.map(\.corsPreflight), [.refuse, .forward, nil])
    }

    func testNamedUpstreamTimeoutsDefaultToTheTopLevelOnes() throws {
        let config = try parse(minimal(plus: """
            upstream_timeout: 45s
            upstreams:
              files: {url: "unix:/run/files.sock"}
            rules:
              - {path: /files/**, upstream: files}

            """))
        XCTAssertEqual(config.upstreams.first?.timeout, .seconds(45))
        XCTAssertEqual(config.upstreams.first?.connectTimeout, .seconds(5))
    }

    func testNoRulesIsTodaysBehaviour() throws {
        let config = try parse(minimal(plus: ""))
        XCTAssertEqual(config.rules, [])
        XCTAssertEqual(config.upstreams, [])
    }

    func testErrorsNameTheEntryLineAndColumn() throws {
        let cases: [(String, String, [Int?], String)] = [
            ("rules:\n  - methods: [GET]\n", "rules[0].path", [12, 5], "missing required key"),
            ("rules:\n  - path: admin\n", "rules[0].path", [12, 11], "must start with /"),
            ("rules:\n  - path: /a\n    methods: [FETCH]\n", "rules[0].methods[0]", [13, 15], "unknown method"),
            ("rules:\n  - path: /a\n    methods: []\n", "rules[0].methods", [13, 14], "match no request"),
            // Not a list, or an item that is none, is that one error, never also an empty list.
            ("rules:\n  - path: /a\n    methods: GET\n", "rules[0].methods", [13, 14], "expected a list"),
            ("rules:\n  - path: /a\n    methods: [[GET]]\n", "rules[0].methods[0]", [13, 15], "expected a single value"),
            ("rules:\n  - path: /a\n    upstream: nowhere\n", "rules[0].upstream", [13, 15], "no upstream named"),
            ("rules:\n  - path: /a\n    host: a.example.com:8080\n", "rules[0].host", [13, 11], "without a port"),
            ("rules:\n  - path: /a\n    deny: true\n    public: true\n", "rules[0].public", [14, 13], "deny rule"),
            ("rules:\n  - path: /a\n    deny: true\n    allowed_emails: [a@b.co]\n", "rules[0].allowed_emails", [14, 21], "deny rule"),
            ("rules:\n  - path: /a\n    public: true\n    allowed_email_domains: [b.co]\n", "rules[0].allowed_email_domains",
             [14, 28], "public rule"),
            ("rules:\n  - path: /a\n    public: true\n    api: true\n", "rules[0].api", [14, 10], "public rule"),
            ("rules:\n  - path: /a\n    publik: true\n", "rules[0].publik", [13, 5], "unknown key"),
            ("rules:\n  - path: /a\n    cors_preflight: allow\n", "rules[0].cors_preflight", [13, 21], "not forward or refuse"),
            ("rules:\n  - path: /a\n    deny: true\n    cors_preflight: forward\n", "rules[0].cors_preflight", [14, 21], "deny rule"),
            ("rules:\n  - path: /a\n    public: true\n    cors_preflight: refuse\n", "rules[0].cors_preflight", [14, 21],
             "public rule"),
            ("rules:\n  - /a\n", "rules[0]", [12, 5], "expected a mapping"),
            ("rules: {path: /a}\n", "rules", [11, 8], "expected a list"),
            ("upstreams:\n  default: {url: http://127.0.0.1:1}\n", "upstreams.default", [12, 3], "top-level upstream"),
            ("upstreams:\n  Api: {url: http://127.0.0.1:1}\n", "upstreams.Api", [12, 3], "invalid upstream name"),
            ("upstreams:\n  api: {url: ftp://x.example}\n", "upstreams.api.url", [12, 14], "scheme"),
            ("upstreams:\n  api: {upstream_timeout: 3s}\n", "upstreams.api.url", [12, 8], "missing required key"),
        ]
        for (yaml, path, position, message) in cases {
            let found = try errors(minimal(plus: yaml))
            XCTAssertEqual(found.map(\.path), [path], yaml)
            XCTAssertEqual(found.first.map { [$0.line, $0.column] }, position, yaml)
            XCTAssertTrue(found.first?.message.contains(message) ?? false, "\(yaml): \(found)")
        }
    }

    func testCheckWarnsOfShadowedRulesAndPublicAPIPaths() throws {
        let config = try parse(minimal(plus: """
            access:
              api_paths: [/api/**]
            rules:
              - path: /admin/**
              - path: /admin/users/*
                allowed_subjects: [x]
              - path: /x
                methods: [GET]
              - path: /x
                methods: [POST]
              - path: /x
                methods: [GET, HEAD]
                host: a.example.com
              - path: /api/v2/**
                public: true

            """))
        XCTAssertEqual(config.warnings.map(\.path), ["rules[1]", "rules[5]"])
        XCTAssertEqual(config.warnings.map(\.line), [15, 24])
        XCTAssertTrue(config.warnings[0].message.contains("can never match: rules[0] (line 14)"), "\(config.warnings)")
        XCTAssertTrue(config.warnings[1].message.contains("access.api_paths"), "\(config.warnings)")
        XCTAssertEqual(config.warnings[0].line(file: "sidecar.yaml"),
                       "sidecar.yaml:15:5: warning: rules[1]: " + config.warnings[0].message)
    }

    func testAnUpstreamNoRuleUsesIsWarnedAbout() throws {
        let config = try parse(minimal(plus: "upstreams:\n  api: {url: http://127.0.0.1:9001}\n"))
        XCTAssertEqual(config.warnings.map(\.path), ["upstreams.api"])
    }

    func testRuleKeysAreKnownButNotSettableFromTheEnvironment() throws {
        XCTAssertTrue(Config.keyPaths.contains("rules.allowed_email_domains"))
        XCTAssertTrue(Config.keyPaths.contains("upstreams.<name>.upstream_timeout"))
        let config = try parse(minimal(plus: ""), environment: Fixture.environment.merging(["SIDECAR_RULES_PATH": "/**"]) { $1 })
        XCTAssertEqual(config.rules, [])
    }
}
