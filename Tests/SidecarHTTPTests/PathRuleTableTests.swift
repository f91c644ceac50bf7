import XCTest
import SidecarHTTP

final class PathRuleTableTests: XCTestCase {
    private func match(_ table: PathRuleTable, _ path: String, _ method: HTTPMethod = .get, host: String? = nil) -> Int? {
        var p = path
        return p.withUTF8 { pathBytes in
            guard var h = host else { return table.firstMatch(path: UnsafeRawBufferPointer(pathBytes), method: method, host: nil) }
            return h.withUTF8 { hostBytes in
                table.firstMatch(path: UnsafeRawBufferPointer(pathBytes), method: method, host: UnsafeRawBufferPointer(hostBytes))
            }
        }
    }

    private let rules = [
        PathRuleCondition(glob: "/admin/**", methods: HTTPMethodSet([.post, .delete])),  // 0
        PathRuleCondition(glob: "/admin/**"),  // 1
        PathRuleCondition(glob: "/api/v1/*/items", host: "api.example.com"),  // 2
        PathRuleCondition(glob: "/api/**"),  // 3
        PathRuleCondition(glob: "/static/**"),  // 4
        PathRuleCondition(glob: "/*.css"),  // 5
        PathRuleCondition(glob: "/"),  // 6
        PathRuleCondition(glob: "/exact"),  // 7
        PathRuleCondition(glob: "/**/*.png"),  // 8
        PathRuleCondition(glob: "/**", host: "admin.example.com"),  // 9
    ]

    func testTable() {
        let table = PathRuleTable(rules)
        let cases: [(String, HTTPMethod, String?, Int?)] = [
            ("/admin", .post, nil, 0),
            ("/admin", .get, nil, 1),
            ("/admin/", .delete, nil, 0),
            ("/admin/users/7", .get, nil, 1),
            ("/administrator", .get, nil, nil),
            ("/api/v1/x/items", .get, "API.example.com:8443", 2),
            ("/api/v1/x/items", .get, "other.example.com", 3),
            ("/api/v1/x/items", .get, nil, 3),
            ("/api", .get, nil, 3),
            ("/static/a/b/c.png", .get, nil, 4),
            ("/site.css", .get, nil, 5),
            ("/a/site.css", .get, nil, nil),
            ("/", .get, nil, 6),
            ("/exact", .head, nil, 7),
            ("/exact/", .head, nil, nil),
            ("/x/y.png", .get, nil, 8),
            ("/y.png", .get, nil, nil),
            ("/anything", .get, "admin.example.com", 9),
            ("/anything", .other, "admin.example.com:80", 9),
            ("/anything", .get, "[::1]:80", nil),
            ("/anything", .get, "admin.example.com.", 9),
            ("/anything", .get, "ADMIN.example.COM..:443", 9),
            ("/anything", .get, "admin.example.com.evil", nil),
            ("/anything", .get, "xadmin.example.com", nil),
            ("/exact", .get, "admin.example.com", 7),
        ]
        for (path, method, host, expected) in cases {
            XCTAssertEqual(match(table, path, method, host: host), expected, "\(method) \(path) host \(host ?? "-")")
        }
    }

    func testMethodsOutsideTheStandardSetMatchOnlyRulesWithoutMethods() {
        let table = PathRuleTable([PathRuleCondition(glob: "/x", methods: HTTPMethodSet([.get])), PathRuleCondition(glob: "/x")])
        XCTAssertEqual(match(table, "/x", .other), 1)
        XCTAssertEqual(match(table, "/x", .get), 0)
    }

    func testIPv6HostWithPort() {
        let table = PathRuleTable([PathRuleCondition(glob: "/**", host: "[::1]")])
        XCTAssertEqual(match(table, "/a", host: "[::1]:8080"), 0)
        XCTAssertEqual(match(table, "/a", host: "[::1]"), 0)
        XCTAssertNil(match(table, "/a", host: "[::2]"))
    }

    /// Method-override field values: each comma-separated item, in any case; unknown names
    /// are `.other`.
    func testMethodOverrides() {
        func overrides(_ value: String) -> HTTPMethodSet {
            var set = HTTPMethodSet()
            Array(value.utf8).withUnsafeBytes { set.insertOverrides($0) }
            return set
        }
        XCTAssertEqual(overrides("DELETE").methods, [.delete])
        XCTAssertEqual(overrides(" delete ").methods, [.delete])
        XCTAssertEqual(overrides("Put, PATCH").methods, [.put, .patch])
        XCTAssertEqual(overrides("PROPFIND").methods, [.other])
        XCTAssertEqual(overrides("DELETEDELETE").methods, [.other])
        XCTAssertEqual(overrides("").methods, [])
        XCTAssertEqual(overrides(" , ").methods, [])
    }

    func testTrailingDotOfAConfiguredHostIsIgnored() {
        let table = PathRuleTable([PathRuleCondition(glob: "/**", host: "Admin.Example.com.")])
        XCTAssertEqual(match(table, "/a", host: "admin.example.com"), 0)
        XCTAssertEqual(match(table, "/a", host: "admin.example.com.:8443"), 0)
    }

    func testEmptyTableMatchesNothing() {
        XCTAssertNil(match(PathRuleTable([]), "/"))
    }

    /// The trie must pick exactly the rule a first-match scan over the list picks.
    func testAgreesWithAScanOverRandomRulesAndPaths() {
        var rng = SplitMix(seed: 0x5EED)
        let words = ["a", "b", "admin", "api", "v1", "", "x.css", "img", "a.png"]
        let tails = ["", "/**", "/*", "*", "/*.png", "/**/x", "/a*b", "/***"]
        let methods: [HTTPMethod] = [.get, .head, .post, .put, .delete, .options, .patch, .other]
        let hosts = [nil, "a.example", "b.example"]
        func randomPath(_ maxSegments: Int) -> String {
            let n = Int(rng.next() % UInt64(maxSegments + 1))
            return "/" + (0..<n).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: "/")
        }
        for _ in 0..<200 {
            let count = 1 + Int(rng.next() % 50)
            let conditions = (0..<count).map { _ -> PathRuleCondition in
                var glob = randomPath(3) + tails[Int(rng.next() % UInt64(tails.count))]
                if glob.hasPrefix("//") { glob.removeFirst() }
                var set = HTTPMethodSet()
                if rng.next() % 3 == 0 {
                    for _ in 0..<(1 + rng.next() % 3) { set.insert(methods[Int(rng.next() % UInt64(methods.count - 1))]) }
                }
                return PathRuleCondition(glob: glob, methods: set, host: hosts[Int(rng.next() % 3)])
            }
            let table = PathRuleTable(conditions)
            for _ in 0..<200 {
                var path = randomPath(5)
                let method = methods[Int(rng.next() % UInt64(methods.count))]
                var host = ["a.example", "B.EXAMPLE:81", "c.example"][Int(rng.next() % 3)]
                let viaTrie = path.withUTF8 { p in host.withUTF8 { h in
                    table.firstMatch(path: UnsafeRawBufferPointer(p), method: method, host: UnsafeRawBufferPointer(h))
                } }
                let viaScan = path.withUTF8 { p in host.withUTF8 { h in
                    table.firstMatchByScan(path: UnsafeRawBufferPointer(p), method: method, host: UnsafeRawBufferPointer(h))
                } }
                XCTAssertEqual(viaTrie, viaScan, "\(method) \(path) on \(host) with \(conditions.map(\.glob.pattern))")
                if viaTrie != viaScan { return }
            }
        }
    }
}

private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
