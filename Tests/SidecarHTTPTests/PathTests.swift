import XCTest
import SidecarHTTP

final class PathNormalizerTests: XCTestCase {
    func testNormalization() throws {
        let cases: [(String, String)] = [
            ("/", "/"),
            ("", "/"),
            ("/a/b", "/a/b"),
            ("/public/../admin", "/admin"),
            ("/public/%2e%2e/admin", "/admin"),
            ("/public/%2E%2e/admin", "/admin"),
            ("/public/.%2e/admin", "/admin"),
            ("/a/./b", "/a/b"),
            ("/a/%2e/b", "/a/b"),
            ("/a/.", "/a/"),
            ("/a/..", "/"),
            ("/a/b/..", "/a/"),
            ("/..", "/"),
            ("/../..", "/"),
            ("/../a", "/a"),
            ("/./a", "/a"),
            ("/a//b", "/a//b"),
            ("/a//../b", "/a/b"),
            ("/a/b/../../../c", "/c"),
            ("/%7E/%7e%41%2D", "/~/~A-"),
            ("/a%2Fb", "/a%2Fb"),
            ("/a%2fb", "/a%2Fb"),
            ("/a/%2f../b", "/a/%2F../b"),
            ("/%2e%2e%2fadmin", "/..%2Fadmin"),
            ("/x%20y%c3%a9", "/x%20y%C3%A9"),
            ("/a..b/.c/..d", "/a..b/.c/..d"),
            ("/:@!$&'()*+,;=", "/:@!$&'()*+,;="),
            ("/a|b\\c<d>\"{}^`", "/a%7Cb%5Cc%3Cd%3E%22%7B%7D%5E%60"),
            ("/é", "/%C3%A9"),
        ]
        for (input, expected) in cases {
            XCTAssertEqual(try PathNormalizer.normalize(input), expected, input)
        }
    }

    func testRejections() {
        for bad in ["/%zz", "/%2", "/a%", "/%g0", "/%%", "/%2%2e"] {
            XCTAssertThrowsError(try PathNormalizer.normalize(bad), bad) {
                XCTAssertEqual($0 as? PathNormalizationError, .invalidEscape)
            }
        }
        XCTAssertThrowsError(try PathNormalizer.normalize("a/b")) {
            XCTAssertEqual($0 as? PathNormalizationError, .notAbsolute)
        }
    }

    /// Servlet containers cut `;parameters` off a segment and then resolve dot segments:
    /// `/public/..;/admin` is `/admin` to Tomcat. Any such segment is refused, wherever it is.
    func testDotSegmentsWithParametersAreRefused() {
        for bad in ["/public/..;/admin", "/public/..;jsessionid=1/admin", "/a/.;/b", "/public/%2e%2e;/admin",
                    "/public/%2E.;x=1/admin", "/..;", "/a/..;", "/a/.;", "/.%2e;/x"] {
            var out: [UInt8] = Array("kept".utf8)
            XCTAssertThrowsError(try bad.utf8CString.withUnsafeBytes {
                try PathNormalizer.normalize(UnsafeRawBufferPointer(rebasing: $0.dropLast()), into: &out)
            }, bad) {
                XCTAssertEqual($0 as? PathNormalizationError, .dotSegmentWithParameters, bad)
            }
            XCTAssertEqual(String(decoding: out, as: UTF8.self), "kept", "nothing appended for \(bad)")
        }
        // Segments that only begin with dots, or carry parameters without being dot segments.
        for (good, normalized) in [("/a;b/c", "/a;b/c"), ("/.well-known/x", "/.well-known/x"), ("/...;/x", "/...;/x"),
                                   ("/a/..b;c", "/a/..b;c"), ("/a/%3B../b", "/a/%3B../b"), ("/a/..%3B/b", "/a/..%3B/b")] {
            XCTAssertEqual(try PathNormalizer.normalize(good), normalized, good)
        }
    }

    func testIdempotent() throws {
        for input in ["/public/%2e%2e/admin", "/a/%2f../b", "/x%20y%c3%a9/./", "/a|b"] {
            let once = try PathNormalizer.normalize(input)
            XCTAssertEqual(try PathNormalizer.normalize(once), once, input)
        }
    }

    func testAppendsToExistingBuffer() throws {
        var out = Array("GET ".utf8)
        try Array("/a/../b".utf8).withUnsafeBytes { try PathNormalizer.normalize($0, into: &out) }
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "GET /b")
    }
}

final class PathGlobTests: XCTestCase {
    func testGlobs() {
        let cases: [(String, String, Bool)] = [
            ("/public/*", "/public/a", true),
            ("/public/*", "/public/", true),
            ("/public/*", "/public", false),
            ("/public/*", "/public/a/b", false),
            ("/public/**", "/public", true),
            ("/public/**", "/public/", true),
            ("/public/**", "/public/a/b/c", true),
            ("/public/**", "/publicity", false),
            ("/public/**", "/admin", false),
            ("/**", "/", true),
            ("/**", "/anything/at/all", true),
            ("/*.css", "/site.css", true),
            ("/*.css", "/a/site.css", false),
            ("/**/*.css", "/a/b/site.css", true),
            ("/**/*.css", "/site.css", false),
            ("/assets/*/img/**", "/assets/v1/img", true),
            ("/assets/*/img/**", "/assets/v1/img/x.png", true),
            ("/assets/*/img/**", "/assets/v1/v2/img/x.png", false),
            ("/a*b*c", "/abc", true),
            ("/a*b*c", "/aXbYc", true),
            ("/a*b*c", "/aXbY/c", false),
            ("/a**c", "/aX/Y/c", true),
            ("/exact", "/exact", true),
            ("/exact", "/exact/", false),
            ("/exact", "/Exact", false),
            ("/healthz", "/healthz", true),
            ("/x/***", "/x", true),
        ]
        for (pattern, path, expected) in cases {
            XCTAssertEqual(PathGlob(pattern).matches(path), expected, "\(pattern) vs \(path)")
        }
    }

    func testLongPatternAndPathDoNotBlowUp() {
        let pattern = String(repeating: "*a", count: 100) + "/**"
        let path = "/" + String(repeating: "a", count: 5000) + "b"
        XCTAssertFalse(PathGlob(pattern).matches(path))
        XCTAssertTrue(PathGlob("/" + pattern).matches("/" + String(repeating: "a", count: 300)))
    }

    func testGlobSet() {
        let set = PathGlobSet(["/public/**", "/favicon.ico"])
        XCTAssertTrue(set.matches("/favicon.ico"))
        XCTAssertTrue(set.matches("/public"))
        XCTAssertFalse(set.matches("/admin"))
        XCTAssertFalse(PathGlobSet([]).matches("/"))
    }
}
