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
            ("/a//b", "/a/b"),
            ("//admin/x", "/admin/x"),
            ("///a///b//", "/a/b/"),
            ("/a/.//b", "/a/b"),
            ("/a//../b", "/b"),
            ("/a/..//b", "/b"),
            ("/a/b/../../../c", "/c"),
            ("/%7E/%7e%41%2D", "/~/~A-"),
            ("/x%20y%c3%a9", "/x%20y%C3%A9"),
            ("/a..b/.c/..d", "/a..b/.c/..d"),
            ("/admin./x", "/admin./x"),
            ("/admin;x/y", "/admin;x/y"),
            ("/:@!$&'()*+,;=", "/:@!$&'()*+,;="),
            ("/a|b<d>\"{}^`", "/a%7Cb%3Cd%3E%22%7B%7D%5E%60"),
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
        for (good, normalized) in [("/a;b/c", "/a;b/c"), ("/.well-known/x", "/.well-known/x"),
                                   ("/a/..b;c", "/a/..b;c"), ("/a/%3B../b", "/a/%3B../b"), ("/a/..%3B/b", "/a/..%3B/b")] {
            XCTAssertEqual(try PathNormalizer.normalize(good), normalized, good)
        }
    }

    /// `%2F`, `%5C` and `\` are refused by default; `decode` takes them for `/` (so `..`
    /// after one climbs, as it would on an upstream that decodes); `keep` keeps them escaped.
    func testEncodedSeparators() throws {
        for bad in ["/a%2Fb", "/a%2fb", "/open/..%2Fsecret.txt", "/open/%2e%2e%2fsecret.txt", "/a%5Cb", "/a%5cb",
                    "/a\\b", "/open/..\\secret"] {
            XCTAssertThrowsError(try PathNormalizer.normalize(bad), bad) {
                XCTAssertEqual($0 as? PathNormalizationError, .encodedSeparator, bad)
            }
        }
        let decoded: [(String, String)] = [
            ("/a%2Fb", "/a/b"), ("/open/..%2Fsecret.txt", "/secret.txt"), ("/open/%2e%2e%2fsecret.txt", "/secret.txt"),
            ("/open/..%5Csecret", "/secret"), ("/open\\..\\admin", "/admin"), ("/%2F%2Fadmin", "/admin"),
            ("/admin%2Fx", "/admin/x"),
        ]
        for (input, expected) in decoded {
            XCTAssertEqual(try PathNormalizer.normalize(input, separators: .decode), expected, input)
        }
        let kept: [(String, String)] = [
            ("/a%2Fb", "/a%2Fb"), ("/a%2fb", "/a%2Fb"), ("/a/%2f../b", "/a/%2F../b"), ("/%2e%2e%2fadmin", "/..%2Fadmin"),
            ("/a\\b", "/a%5Cb"), ("/a%5cb", "/a%5Cb"),
        ]
        for (input, expected) in kept {
            XCTAssertEqual(try PathNormalizer.normalize(input, separators: .keep), expected, input)
        }
    }

    /// A segment some upstream reads as nothing once it cuts `;parameters`, trailing dots and
    /// trailing spaces is refused: it would be an empty or dot segment there.
    func testSegmentsEmptyOnceCutAreRefused() {
        for bad in ["/;x/admin", "/a/;/b", "/...", "/a/.../b", "/a/..%20/b", "/a/.%20", "/%20/x", "/a/...;x/b", "/a/;"] {
            XCTAssertThrowsError(try PathNormalizer.normalize(bad), bad) {
                XCTAssertEqual($0 as? PathNormalizationError, .segmentEmptyOnceCut, bad)
            }
        }
        for good in ["/a./b", "/a;x/b", "/a%20b/c", "/x.y./z", "/.well-known/x", "/a/"] {
            XCTAssertNoThrow(try PathNormalizer.normalize(good), good)
        }
    }

    func testIdempotent() throws {
        for input in ["/public/%2e%2e/admin", "//a//b", "/x%20y%c3%a9/./", "/a|b", "/A;x/B./"] {
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

final class LenientPathTests: XCTestCase {
    private func lenient(_ path: String) -> String {
        var out: [UInt8] = []
        Array(path.utf8).withUnsafeBytes { LenientPath.append($0, into: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    private func same(_ path: String) -> Bool { Array(path.utf8).withUnsafeBytes { LenientPath.isSame($0) } }

    func testReading() {
        let cases: [(String, String)] = [
            ("/", "/"),
            ("/admin/x", "/admin/x"),
            ("/ADMIN/X", "/admin/x"),
            ("/admin;x/y", "/admin/y"),
            ("/internal;/x", "/internal/x"),
            ("/admin;jsessionid=1;a=b/y;z", "/admin/y"),
            ("/admin./x", "/admin/x"),
            ("/admin.../x", "/admin/x"),
            ("/admin%20/x", "/admin/x"),
            ("/admin.%20./x", "/admin/x"),
            ("/Admin.;X/", "/admin/"),
            ("/a.b/c.d", "/a.b/c.d"),
            ("/a%2Fb", "/a%2fb"),
            ("/x/", "/x/"),
        ]
        for (input, expected) in cases {
            XCTAssertEqual(lenient(input), expected, input)
            XCTAssertEqual(same(input), input == expected, input)
        }
    }

    /// `isSame` agrees with the reading itself on random paths over the bytes that matter.
    func testIsSameAgreesWithTheReading() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ.;/%20".utf8)
        for _ in 0..<5_000 {
            var path: [UInt8] = [UInt8(ascii: "/")]
            for _ in 0..<Int.random(in: 0...10, using: &generator) { path.append(alphabet.randomElement(using: &generator)!) }
            var out: [UInt8] = []
            path.withUnsafeBytes { LenientPath.append($0, into: &out) }
            XCTAssertEqual(path.withUnsafeBytes { LenientPath.isSame($0) }, out == path, String(decoding: path, as: UTF8.self))
        }
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
