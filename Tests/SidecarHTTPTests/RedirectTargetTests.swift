import XCTest
import SidecarHTTP

final class RedirectTargetTests: XCTestCase {
    let policy = RedirectPolicy(
        publicOrigin: "https://app.example.com",
        allowedHosts: ["docs.example.com", "admin.example.com:8443", "[::1]:9443"])

    func testAllowed() {
        for target in [
            "/", "/a/b?x=1#f", "/search?q=a%20b", "/a%2Fb", "/caf%C3%A9", "/?next=%2F%2Fevil.com",
            "https://app.example.com/x", "https://app.example.com", "https://APP.example.com:443/x",
            "HTTPS://app.example.com/x?y#z", "https://docs.example.com/guide", "https://docs.example.com:443",
            "https://admin.example.com:8443/", "https://[::1]:9443/x",
        ] {
            XCTAssertEqual(policy.safeTarget(target), target, target)
        }
    }

    func testRefused() {
        for target in [
            "", "//evil.com", "///evil.com", "/\\evil.com", "\\\\evil.com", "/%2F%2Fevil.com", "/%2f/evil.com",
            "/%5Cevil.com", "/%5cevil.com", "/a%5Cb", "/\t/evil.com", "/%09/evil.com", "/ /evil.com",
            "/a\nb", "/a%0Db", "/a%00", "/a%7F", "/a%C2%85", "/%zz", "/%2",
            "javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,x", "http://app.example.com/x",
            "https://app.example.com@evil.com", "https://evil.com@app.example.com/", "https://user@app.example.com/",
            "https://evil.com", "https://app.example.com.evil.com/", "https://app.example.com:8443/",
            "https://admin.example.com/", "https://docs.example.com:8443/", "https:/app.example.com",
            "https:app.example.com", "https://", "https://app.example.com\\@evil.com", "https://app.example.com%2F@evil.com",
            "/／evil.com", "/⁄evil.com", "/∕evil.com", "https://app.example.com／evil.com", "／／evil.com",
            "/a\u{00A0}b", "/a\u{2028}", "\u{3000}/x", "/a\u{200B}", "/a\u{85}", " /", "/x ", "evil.com", "app.example.com/x",
            "?x", "#f", "/<script>", "/a\"b", "/a/..//evil.com", "/%2e%2e//evil.com",
        ] {
            XCTAssertNil(policy.safeTarget(target), target.debugDescription)
        }
    }

    func testFreeFunction() {
        XCTAssertEqual(safeRedirectTarget(raw: "/x", publicOrigin: "https://a.test", allowedHosts: []), "/x")
        XCTAssertEqual(safeRedirectTarget(raw: "https://a.test:8443/", publicOrigin: "https://a.test:8443", allowedHosts: []), "https://a.test:8443/")
        XCTAssertNil(safeRedirectTarget(raw: "https://a.test/", publicOrigin: "https://a.test:8443", allowedHosts: []))
        XCTAssertEqual(safeRedirectTarget(raw: "https://b.test/", publicOrigin: "https://a.test", allowedHosts: ["B.TEST"]), "https://b.test/")
    }

    /// oauth2-proxy's open-redirect payloads (see the vector's NOTICE).
    func testOpenRedirectPayloads() throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("../shared/vectors/open-redirects/openredirects.txt")
        let payloads = try String(contentsOf: url, encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        XCTAssertEqual(payloads.count, 558)
        let sites = [
            RedirectPolicy(publicOrigin: "https://app.example.com", allowedHosts: []),
            RedirectPolicy(publicOrigin: "https://www.whitelisteddomain.tld", allowedHosts: ["www.whitelisteddomain.tld"]),
        ]
        // Families that are never same-site paths: every one must be refused.
        let singleSlashPaths = payloads.filter {
            $0.hasPrefix("/") && !$0.hasPrefix("//") && !$0.hasPrefix("/\\")
        }
        XCTAssertEqual(singleSlashPaths.count, 85)
        for site in sites {
            let accepted = payloads.filter { site.safeTarget($0) != nil }
            // Only genuine same-site paths pass: one leading slash, no backslash, control or
            // encoded backslash/control in the path, no encoded slash right after the first, nothing outside the URI alphabet.
            XCTAssertEqual(accepted.count, 50)
            for p in accepted {
                XCTAssertTrue(singleSlashPaths.contains(p), p)
                let path = p.prefix { $0 != "?" && $0 != "#" }.lowercased()
                XCTAssertFalse(path.hasPrefix("/%2f"), p)
                for bad in ["\\", "%5c", "%09", "%01", "<", ">"] {
                    XCTAssertFalse(path.contains(bad), "\(p) contains \(bad)")
                }
            }
            let refusedPaths = singleSlashPaths.filter { site.safeTarget($0) == nil }
            XCTAssertEqual(refusedPaths.count, 35)
            XCTAssertTrue(refusedPaths.allSatisfy { p in
                ["%09", "%5c", "%2f", "%01", "\\", "<"].contains { p.lowercased().contains($0) }
            })
            // Scheme-relative, backslash, absolute http(s) to foreign hosts, javascript:,
            // data:, Unicode look-alikes and other junk: all refused.
            let rest = payloads.filter { !singleSlashPaths.contains($0) }
            XCTAssertEqual(rest.count, 473)
            XCTAssertEqual(rest.filter { site.safeTarget($0) != nil }, [])
        }
    }
}
