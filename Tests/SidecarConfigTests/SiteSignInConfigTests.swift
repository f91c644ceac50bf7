import XCTest
import SidecarConfig

/// `sites.<name>.public_url` and `client_id`: a site signing in on its own host, and what is
/// refused at the key's line and column.
final class SiteSignInConfigTests: XCTestCase {
    private let apple = """
        apple:
          team_id: ABCDE12345
          client_id: [com.example.web, com.example.shop]
          key_id: XYZ123ABCD
          private_key_file: AuthKey.p8

        """

    private func config(shop: String, session: String = "session:\n  secrets: [env:SIDECAR_COOKIE_SECRET]\n") -> String {
        """
        listen: 0.0.0.0:8080
        public_url: https://app.example.com
        upstream: http://127.0.0.1:3000
        \(apple)\(session)sites:
          app:
            hosts: [app.example.com]
            upstream: http://127.0.0.1:3000
          shop:
            hosts: [shop.example.com, Shop.Example.org]
            upstream: http://127.0.0.1:3001
        \(shop)
        """
    }

    func testASiteWithItsOwnPublicURLAndServicesID() throws {
        let loaded = try parse(config(shop: "    public_url: https://SHOP.example.org\n    client_id: com.example.shop\n"))
        let shop = try XCTUnwrap(loaded.sites.last)
        XCTAssertEqual(shop.publicURL?.origin, "https://shop.example.org")
        XCTAssertEqual(shop.clientID, "com.example.shop")
        XCTAssertEqual(shop.redirectURI(prefix: loaded.routes.prefix), "https://shop.example.org/.auth/callback")
        XCTAssertNil(loaded.sites.first?.publicURL)
        XCTAssertNil(loaded.sites.first?.redirectURI(prefix: "/.auth"))
    }

    func testWithSessionDomainASiteOutsideItMaySignInOnItsOwnHost() throws {
        let domain = "session:\n  secrets: [env:SIDECAR_COOKIE_SECRET]\n  domain: example.com\n"
        let shop = try XCTUnwrap(try parse(config(shop: "    public_url: https://shop.example.org\n", session: domain)).sites.last)
        XCTAssertEqual(shop.publicURL?.host, "shop.example.org")
        let found = try errors(config(shop: "    public_url: https://shop.example.com\n", session: domain))
        XCTAssertEqual(found.map(\.path), ["sites.shop.public_url"])
        XCTAssertTrue(found.first?.message.contains("under session.domain example.com") ?? false, "\(found)")
    }

    func testAPublicURLAloneKeepsTheFirstServicesID() throws {
        let shop = try XCTUnwrap(try parse(config(shop: "    public_url: https://shop.example.com\n")).sites.last)
        XCTAssertNotNil(shop.publicURL)
        XCTAssertNil(shop.clientID)
    }

    func testErrorsNameTheKeyLineAndColumn() throws {
        let domain = "session:\n  secrets: [env:SIDECAR_COOKIE_SECRET]\n  domain: example.com\n"
        let cases: [(String, String, String, [Int?], String)] = [
            ("    public_url: https://other.example.com\n", "", "sites.shop.public_url", [18, 17],
             "not one of the site's hosts"),
            ("    public_url: http://shop.example.com\n", "", "sites.shop.public_url", [18, 17], "plain http"),
            ("    public_url: https://shop.example.com/path\n", "", "sites.shop.public_url", [18, 17], "must not have a path"),
            ("    public_url: https://shop.example.com\n    client_id: com.example.other\n", "", "sites.shop.client_id",
             [19, 16], "not one of apple.client_id"),
            ("    client_id: com.example.shop\n", "", "sites.shop.public_url", [18, 16], "give the site a public_url"),
            ("    public_url: https://shop.example.com\n", domain, "sites.shop.public_url", [19, 17], "under session.domain"),
        ]
        for (shop, session, path, position, message) in cases {
            let yaml = session.isEmpty ? config(shop: shop) : config(shop: shop, session: session)
            let found = try errors(yaml)
            XCTAssertEqual(found.map(\.path), [path], yaml)
            XCTAssertEqual(found.first.map { [$0.line, $0.column] }, position, yaml)
            XCTAssertTrue(found.first?.message.contains(message) ?? false, "\(yaml): \(found)")
        }
    }

    func testASitesOwnRulesLoadAndTheOthersKeepTheTopLevelOnes() throws {
        let rules = "    rules:\n      - path: /admin/**\n        allowed_emails: [boss@example.com]\n      - path: /**\n        public: true\n"
        let loaded = try parse(config(shop: rules))
        XCTAssertNil(loaded.sites.first?.rules)
        let shop = try XCTUnwrap(loaded.sites.last?.rules)
        XCTAssertEqual(shop.map(\.path), ["/admin/**", "/**"])
        XCTAssertEqual(shop.first?.allowedEmails, ["boss@example.com"])
        XCTAssertEqual(shop.last?.isPublic, true)
        XCTAssertEqual(try parse(config(shop: "    rules: []\n")).sites.last?.rules, [])
    }

    func testASitesRuleErrorsNameTheSiteLineAndColumn() throws {
        let cases: [(String, String, [Int?], String)] = [
            ("    rules:\n      - path: /x\n        upstream: nowhere\n", "sites.shop.rules[0].upstream", [20, 19],
             "no upstream named"),
            ("    rules:\n      - path: /x\n        deny: true\n        public: true\n", "sites.shop.rules[0].public",
             [21, 17], "deny rule"),
            ("    rules:\n      - path: /x\n        colour: red\n", "sites.shop.rules[0].colour", [20, 9], "unknown key"),
        ]
        for (shop, path, position, message) in cases {
            let found = try errors(config(shop: shop))
            XCTAssertEqual(found.map(\.path), [path], shop)
            XCTAssertEqual(found.first.map { [$0.line, $0.column] }, position, shop)
            XCTAssertTrue(found.first?.message.contains(message) ?? false, "\(shop): \(found)")
        }
    }
}
