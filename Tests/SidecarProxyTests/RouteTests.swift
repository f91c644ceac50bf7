import SidecarConfig
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `Route`: the compiled rules and what each decides, as the policy reads them.
final class RouteTests: XCTestCase {
    /// Upstream n (1…3) is named `u<n>`.
    private static let upstreams = (1...3).map { index in
        Config.NamedUpstream(name: "u\(index)", target: .unix(path: "/run/u\(index).sock"), timeout: .seconds(1),
                             connectTimeout: .seconds(1))
    }

    private func rule(_ glob: String, methods: [String] = [], deny: Bool = false, isPublic: Bool = false,
                      emails: [String] = [], upstream: Int = 0) -> Config.Rule {
        var rule = Config.Rule(index: 0, path: glob)
        rule.methods = methods
        rule.deny = deny
        rule.isPublic = isPublic
        rule.allowedEmails = emails
        rule.upstream = upstream == 0 ? nil : "u\(upstream)"
        return rule
    }

    private func compile(_ rules: [Config.Rule]) -> Route { Route(rules, upstreams: Self.upstreams) }

    private func match(_ route: Route, _ path: String, _ method: HTTPMethod = .get) -> Int? {
        route.match(path: Array(path.utf8), method: method, host: nil)
    }

    func testActionsAndUpstreams() {
        let route = compile([
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

    /// A CORS preflight is forwarded where every reading's rule forwards it (an `api` rule by
    /// default) or, with no rule, where every reading is a public or an API path.
    func testPreflightsAreAdmittedOnlyWhereEveryReadingIs() {
        var refusing = rule("/api/private/**")
        refusing.isAPI = true
        refusing.corsPreflight = .refuse
        var api = rule("/api/**")
        api.isAPI = true
        var web = rule("/web/**")
        web.corsPreflight = .forward
        let route = compile([refusing, api, web, rule("/page/**"), rule("/closed/**", deny: true)])
        let publicPaths = PublicPaths(["/pub/**"])
        let apiPaths = PublicPaths(["/v2/**", "/page/api/**"])
        func admits(_ path: String) -> Bool {
            let normalized = Array(path.utf8)
            var lenient: [UInt8] = []
            normalized.withUnsafeBytes { LenientPath.append($0, into: &lenient) }
            return normalized.withUnsafeBytes { p in
                lenient.withUnsafeBytes { l in
                    route.admitsPreflight(RequestReadings(path: p, lenient: l, method: .options, host: nil),
                                          publicPaths: publicPaths, apiPaths: apiPaths)
                }
            }
        }
        XCTAssertTrue(admits("/api/items"))
        XCTAssertTrue(admits("/web/x"))
        XCTAssertTrue(admits("/v2/x"))
        XCTAssertTrue(admits("/pub/x"))
        XCTAssertTrue(admits("/page/api/x"), "a rule without cors_preflight follows access.api_paths")
        XCTAssertFalse(admits("/page/x"))
        XCTAssertFalse(admits("/other"))
        XCTAssertFalse(admits("/closed/x"))
        XCTAssertFalse(admits("/api/private/x"))
        XCTAssertFalse(admits("/api/PRIVATE/x"), "the lenient reading meets the refusing rule")
        XCTAssertFalse(admits("/api/private;v=1/x"))
        XCTAssertFalse(admits("/api/private./x"))
        XCTAssertFalse(admits("/V2/x"), "a permission is matched on the exact case")
    }

    /// An unknown method is held to a rule refusing by method, and not given a rule admitting by one.
    func testUnknownMethodsAreHeldToRefusingRules() {
        let route = compile([
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

    private func verdict(
        _ route: Route, _ path: String, _ method: HTTPMethod = .get, overrides: [HTTPMethod] = [],
        host: String? = nil, publicPaths: PublicPaths? = nil
    ) -> RuleVerdict {
        let normalized = Array(try! PathNormalizer.normalize(path).utf8)
        var lenient: [UInt8] = []
        normalized.withUnsafeBytes { LenientPath.append($0, into: &lenient) }
        let hostBytes = host.map { Array($0.utf8) } ?? []
        return normalized.withUnsafeBytes { p in
            lenient.withUnsafeBytes { l in
                hostBytes.withUnsafeBytes { h in
                    route.verdict(
                        RequestReadings(path: p, lenient: l, method: method, overrides: HTTPMethodSet(overrides),
                                        host: host == nil ? nil : h),
                        publicPaths: publicPaths)
                }
            }
        }
    }

    private var attacked: Route {
        compile([
            rule("/admin/**", emails: ["boss@example.com"]),  // 0
            rule("/internal/**", deny: true),  // 1
            rule("/open/**", isPublic: true),  // 2
            rule("/writes/**", methods: ["DELETE"], deny: true),  // 3
            rule("/docs/**", methods: ["GET"], isPublic: true),  // 4
        ])
    }

    /// Every spelling an upstream reads as a restricted path is held to its rule.
    func testEverySpellingIsHeldToTheRestrictingRule() {
        let route = attacked
        for path in ["/admin/x", "/ADMIN/x", "/Admin/x", "/admin;x/y", "/admin./x", "/admin%20/x", "//admin/x",
                     "/ADMIN;jsessionid=1./x"] {
            let v = verdict(route, path)
            XCTAssertTrue(v.needsSession, path)
            XCTAssertEqual(v.restricting.count, 1, path)
            XCTAssertEqual(v.restricting[0], 0, path)
            XCTAssertEqual(route.refusal(v, subject: "s", email: "maria@example.com", privateEmail: false)?.rule, 0, path)
            XCTAssertNil(route.refusal(v, subject: "s", email: "boss@example.com", privateEmail: false), path)
        }
        for path in ["/internal/x", "/INTERNAL/x", "/internal;/x", "/internal./x", "/Internal.;a/x"] {
            XCTAssertEqual(verdict(route, path).deny, 1, path)
        }
    }

    /// A public rule admits only what every reading admits: the exact spelling.
    func testPublicNeedsEveryReadingPublic() {
        let route = attacked
        XCTAssertFalse(verdict(route, "/open/a").needsSession)
        XCTAssertNil(verdict(route, "/open/a").deny)
        for path in ["/OPEN/a", "/Open/a", "/open;x/a", "/open./a"] {
            XCTAssertTrue(verdict(route, path).needsSession, path)
        }
        // Parameters on a public path's later segment: both readings are public.
        XCTAssertFalse(verdict(route, "/open/a;v=1").needsSession)
        let publicPaths = PublicPaths(["/static/**"])
        XCTAssertFalse(verdict(compile([]), "/static/x", publicPaths: publicPaths).needsSession)
        XCTAssertTrue(verdict(compile([]), "/STATIC/x", publicPaths: publicPaths).needsSession)
        XCTAssertTrue(verdict(compile([]), "/static;/x", publicPaths: publicPaths).needsSession)
        XCTAssertTrue(verdict(compile([]), "/other", publicPaths: publicPaths).needsSession)
        // Without public paths (forward-auth) an unmatched reading needs a session.
        XCTAssertTrue(verdict(compile([]), "/static/x").needsSession)
    }

    /// A rule written with capitals restricts every case of it too.
    func testUpperCaseGlobsRestrictEveryCase() {
        let route = compile([rule("/Admin/**", deny: true)])
        XCTAssertTrue(route.foldingMatters)
        for path in ["/Admin/x", "/admin/x", "/ADMIN/x"] { XCTAssertEqual(verdict(route, path).deny, 0, path) }
        XCTAssertFalse(compile([rule("/admin/**", deny: true)]).foldingMatters)
    }

    /// Method overrides: a refusing rule matches the request's method or an override's; a
    /// public rule by method admits only if it admits every one of them.
    func testMethodOverrides() {
        let route = attacked
        XCTAssertTrue(route.methodsMatter)
        XCTAssertNil(verdict(route, "/writes/x").deny)
        XCTAssertEqual(verdict(route, "/writes/x", .get, overrides: [.delete]).deny, 3)
        XCTAssertEqual(verdict(route, "/writes/x", .post, overrides: [.other]).deny, 3)
        XCTAssertEqual(verdict(route, "/WRITES/x", .post, overrides: [.delete]).deny, 3)
        XCTAssertFalse(verdict(route, "/docs/a").needsSession)
        XCTAssertTrue(verdict(route, "/docs/a", .get, overrides: [.delete]).needsSession)
        XCTAssertFalse(verdict(route, "/docs/a", .get, overrides: [.get]).needsSession)
    }

    /// The upstream is the normalized path's rule's, under the request's own method.
    func testTheNormalizedPathsRuleChoosesTheUpstream() {
        let route = compile([rule("/api/**", upstream: 2), rule("/API/**", upstream: 3)])
        XCTAssertEqual(verdict(route, "/api/x").rule, 0)
        XCTAssertEqual(verdict(route, "/API/x").rule, 1)
        XCTAssertNil(verdict(route, "/Api/x").rule)
    }

    /// More distinct restricting rules than the verdict holds refuse the request.
    func testTooManyReadingsRefuse() {
        var rules: [Config.Rule] = []
        for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT"] {
            rules.append(rule("/x/**", methods: [method], emails: ["\(method.lowercased())@example.com"]))
        }
        let route = compile(rules)
        let v = verdict(route, "/x/a", .get, overrides: [.head, .post, .put, .delete, .options, .patch, .trace, .connect])
        XCTAssertTrue(v.restricting.overflowed)
        XCTAssertEqual(route.refusal(v, subject: "s", email: "get@example.com", privateEmail: false)?.reason, "too_many_readings")
    }

    /// The top-level rules and each site's own share one numbering of their fields: a site's
    /// route reads its groups from it, and the names are every list's.
    func testEverySitesRulesShareOneNumberingOfTheirFields() {
        var top = rule("/**")
        top.setHeaders = [Config.StaticHeader(name: "X-Role", value: "user")]
        var same = rule("/a/**")
        same.setHeaders = top.setHeaders
        var own = rule("/**")
        own.setHeaders = [Config.StaticHeader(name: "X_Shop", value: "eu")]
        let headers = RuleHeaders(lists: [[top], [], [same, rule("/b/**"), own]])
        XCTAssertEqual(headers.groupsOfList, [[1], [], [1, 0, 2]])
        XCTAssertEqual(headers.names, ["x-role", "x-shop"])
        let site = Route([same, rule("/b/**"), own], upstreams: Self.upstreams, headers: headers, list: 2)
        XCTAssertEqual(verdict(site, "/a/x").headers, 1)
        XCTAssertEqual(verdict(site, "/c").headers, 2)
        XCTAssertEqual(String(decoding: site.headers.block(2), as: UTF8.self), "X_Shop: eu\r\n")
    }

    /// `set_headers`: every reading must fall to rules adding the same fields, or the verdict
    /// names the request ambiguous.
    func testEveryReadingMustAgreeOnTheAddedFields() {
        var billing = rule("/billing/**")
        billing.setHeaders = [Config.StaticHeader(name: "X-Readonly", value: "1")]
        var twin = rule("/reports/**")
        twin.setHeaders = billing.setHeaders
        var any = rule("/**")
        any.setHeaders = [Config.StaticHeader(name: "X-Role", value: "user")]
        let route = compile([billing, twin, rule("/plain/**"), any])
        XCTAssertEqual(route.headers.groupsOfList, [[1, 1, 0, 2]])
        XCTAssertEqual(String(decoding: route.headers.block(1), as: UTF8.self), "X-Readonly: 1\r\n")
        XCTAssertEqual(route.headers.block(0).count, 0)
        XCTAssertEqual(route.headers.names, ["x-readonly", "x-role"])
        XCTAssertEqual(verdict(route, "/billing/x").headers, 1)
        XCTAssertNil(verdict(route, "/billing/x").ambiguousHeaders)
        XCTAssertEqual(verdict(route, "/billing/x;v=1").headers, 1)
        XCTAssertEqual(verdict(route, "/other/PAGE").headers, 2)
        XCTAssertNil(verdict(route, "/other/PAGE").ambiguousHeaders)
        XCTAssertEqual(verdict(route, "/plain/x").headers, 0)
        for path in ["/BILLING/x", "/billing;v=1/x", "/Billing./x"] {
            XCTAssertEqual(verdict(route, path).ambiguousHeaders, 0, path)
        }
        XCTAssertEqual(verdict(route, "/PLAIN/x").ambiguousHeaders, 3, "the catch-all adds fields, /plain/** none")
        // Readings falling to different rules that add the same fields agree.
        var parameters = rule("/billing;v=1/**")
        parameters.setHeaders = billing.setHeaders
        XCTAssertNil(verdict(compile([billing, parameters]), "/billing;v=1/x").ambiguousHeaders)
        XCTAssertEqual(verdict(compile([billing, parameters]), "/billing;v=1/x").headers, 1)
        // Without a rule for one reading, and fields for another: ambiguous.
        let alone = compile([billing])
        XCTAssertEqual(verdict(alone, "/BILLING/x").ambiguousHeaders, 0)
    }

    func testNoRules() {
        let route = compile([])
        XCTAssertTrue(route.isEmpty)
        XCTAssertNil(match(route, "/"))
    }
}
