import XCTest
import SidecarConfig

/// `sites` and `default_site`: what loads, and what is refused at the entry's line and column.
final class SitesConfigTests: XCTestCase {
    private let twoSites = """
        sites:
          app:
            hosts: [App.Example.com, www.example.com]
            upstream: http://127.0.0.1:3000
          admin:
            hosts: [admin.example.com]
            upstream: http://127.0.0.1:3001

        """

    func testSitesLoadAndTheirUpstreamsAreNamedUpstreams() throws {
        let config = try parse(minimal(plus: twoSites + "default_site: admin\n"))
        XCTAssertEqual(config.sites, [
            Config.Site(name: "app", hosts: ["app.example.com", "www.example.com"]),
            Config.Site(name: "admin", hosts: ["admin.example.com"]),
        ])
        XCTAssertEqual(config.upstreams.map(\.name), ["app", "admin"])
        XCTAssertEqual(config.upstreams[1].target, .http(host: "127.0.0.1", port: 3001, basePath: ""))
        XCTAssertEqual(config.defaultSite, "admin")
        XCTAssertEqual(config.warnings, [])
    }

    func testNoSitesIsOneSiteForEveryHost() throws {
        let config = try parse(Fixture.minimal)
        XCTAssertEqual(config.sites, [])
        XCTAssertNil(config.defaultSite)
    }

    func testErrorsNameTheEntryLineAndColumn() throws {
        let cases: [(String, String, [Int?], String)] = [
            (twoSites.replacingOccurrences(of: "[admin.example.com]", with: "[admin.example.com, WWW.example.com]"),
             "sites.admin.hosts", [16, 12], "already sites.app's"),
            ("sites:\n  app:\n    hosts: [app.example.com]\n", "sites.app.upstream", [13, 5], "missing required key"),
            ("sites:\n  app:\n    upstream: http://127.0.0.1:1\n", "sites.app.hosts", [13, 5], "missing required key"),
            ("sites:\n  app:\n    hosts: [app.example.com:443]\n    upstream: http://127.0.0.1:1\n", "sites.app.hosts[0]",
             [13, 13], "without a port"),
            ("upstreams:\n  app: {url: http://127.0.0.1:2}\nsites:\n  app:\n    hosts: [app.example.com]\n"
                + "    upstream: http://127.0.0.1:1\n", "sites.app", [14, 3], "already an upstream's name"),
            (twoSites + "default_site: blog\n", "default_site", [18, 15], "no site named"),
            ("sites:\n  app:\n    hosts: []\n    upstream: http://127.0.0.1:1\n", "sites.app.hosts", [13, 12], "needs a host"),
            ("sites:\n  admin:\n    hosts: [admin.example.com]\n    upstream: http://127.0.0.1:1\n", "sites", [12, 3],
             "public_url's host app.example.com"),
            // A site's rule sets fields as a top-level one does, held to the same names.
            (twoSites.replacingOccurrences(of: "upstream: http://127.0.0.1:3001", with: """
                upstream: http://127.0.0.1:3001
                    rules:
                      - path: /**
                        set_headers: {X-Team: ops, X-Auth-Email: x}
                """), "sites.admin.rules[0].set_headers.X-Auth-Email", [20, 36], "identity header"),
        ]
        for (yaml, path, position, message) in cases {
            let found = try errors(minimal(plus: yaml))
            XCTAssertEqual(found.map(\.path), [path], yaml)
            XCTAssertEqual(found.first.map { [$0.line, $0.column] }, position, yaml)
            XCTAssertTrue(found.first?.message.contains(message) ?? false, "\(yaml): \(found)")
        }
    }

    /// A site's own rules may set fields: the top-level rules and every site's share one
    /// numbering of them (the rewriter renders any site's, and strips every name from every request).
    func testASitesOwnRulesSetHeaders() throws {
        let config = try parse(minimal(plus: twoSites.replacingOccurrences(of: "upstream: http://127.0.0.1:3001", with: """
            upstream: http://127.0.0.1:3001
                rules:
                  - path: /**
                    set_headers: {X-Team: ops}
            """)))
        XCTAssertEqual(config.sites.last?.rules?.first?.setHeaders, [Config.StaticHeader(name: "X-Team", value: "ops")])
        XCTAssertTrue(Config.keyPaths.contains("sites.<name>.rules.set_headers"))
    }
}
