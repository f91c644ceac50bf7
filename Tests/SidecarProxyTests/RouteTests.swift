import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `Route`: the compiled rules and what each decides, as the policy reads them.
final class RouteTests: XCTestCase {
    private func rule(_ glob: String, methods: [String] = [], deny: Bool = false, isPublic: Bool = false,
                      emails: [String] = [], upstream: Int = 0) -> ProxyOptions.Rule {
        let refusing = deny || !emails.isEmpty
        var rule = ProxyOptions.Rule(condition: PathRuleCondition(
            glob: glob, methods: ProxyOptions.Rule.methods(methods, refusing: refusing)))
        rule.deny = deny
        rule.isPublic = isPublic
        rule.allowedEmails = emails
        rule.upstream = upstream
        return rule
    }

    private func match(_ route: Route, _ path: String, _ method: HTTPMethod = .get) -> Int? {
        route.match(path: Array(path.utf8), method: method, host: nil)
    }

    func testActionsAndUpstreams() {
        let route = Route([
            rule("/admin/**", emails: ["boss@example.com"]),
            rule("/api/**", upstream: 2),
            rule("/static/**", isPublic: true),
            rule("/internal/**", deny: true),
        ])
        XCTAssertEqual(match(route, "/admin/x"), 0)
        XCTAssertTrue(route.action(0).restrictsUsers)
        XCTAssertEqual(route.action(match(route, "/api/v1")!).upstream, 2)
        XCTAssertTrue(route.action(match(route, "/static/a.css")!).isPublic)
        XCTAssertTrue(route.action(match(route, "/internal")!).deny)
        XCTAssertNil(match(route, "/other"))
        XCTAssertNil(route.refusal(0, subject: "s", email: "Boss@Example.com", privateEmail: false))
        XCTAssertEqual(route.refusal(0, subject: "s", email: "maria@example.com", privateEmail: false), .email)
        XCTAssertNil(route.refusal(1, subject: "s", email: "maria@example.com", privateEmail: false))
    }

    /// An unknown method is held to a rule refusing by method, and not given a rule admitting by one.
    func testUnknownMethodsAreHeldToRefusingRules() {
        let route = Route([
            rule("/write/**", methods: ["POST"], deny: true),
            rule("/admin/**", methods: ["POST"], emails: ["boss@example.com"]),
            rule("/open/**", methods: ["GET"], isPublic: true),
        ])
        XCTAssertEqual(match(route, "/write/x", .other), 0)
        XCTAssertNil(match(route, "/write/x", .get))
        XCTAssertEqual(match(route, "/admin/x", .other), 1)
        XCTAssertNil(match(route, "/open/x", .other))
        XCTAssertEqual(match(route, "/open/x", .get), 2)
    }

    func testNoRules() {
        let route = Route([])
        XCTAssertTrue(route.isEmpty)
        XCTAssertNil(match(route, "/"))
    }
}
