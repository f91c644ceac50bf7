import XCTest

@testable import SidecarHTTP
@testable import SidecarProxy

/// A browser request for a page, with these `Accept-Language` field lines.
func pageRequest(_ acceptLanguage: String...) -> HTTPRequestHead { parsedPageRequest(acceptLanguage)! }

/// Nil when the head parser refuses it (the client gets 400, never a page).
func parsedPageRequest(_ acceptLanguage: [String]) -> HTTPRequestHead? {
    var text = "GET /private HTTP/1.1\r\nHost: example.com\r\nAccept: text/html\r\n"
    for value in acceptLanguage { text += "Accept-Language: \(value)\r\n" }
    let head = try? HTTPRequestHead.parse(Array((text + "\r\n").utf8), limits: HTTPHeadLimits(maxHeadBytes: 1 << 20))
    return head ?? nil
}

/// The pages in the browser's language: every page in every language, the headers caches
/// need, the default and the override, and hostile `Accept-Language` fields that must neither
/// reach a page nor change anything but the choice among the known languages.
final class PageLanguageTests: XCTestCase {
    private func wire(_ answer: LocalResponse) -> (fields: [String: String], body: String) {
        var out = ByteBuilder()
        answer.write(keepAlive: true, headOnly: false, requestId: Array("req-1".utf8), into: &out)
        let text = String(decoding: out.bytes, as: UTF8.self)
        let end = text.range(of: "\r\n\r\n")!
        var fields: [String: String] = [:]
        for line in text[..<end.lowerBound].split(separator: "\r\n").dropFirst() {
            let colon = line.firstIndex(of: ":")!
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name] = fields[name].map { $0 + ", " + value } ?? value
        }
        return (fields, String(text[end.upperBound...]))
    }

    /// Apple's own localized titles of its "Sign in with Apple" button (the strings of
    /// `ASAuthorizationAppleIDButton`; pt-BR as Apple's Brazilian support pages write it).
    static let applesTitles: [PageLanguage: String] = [
        .english: "Sign in with Apple", .german: "Mit Apple anmelden", .french: "Connexion avec Apple",
        .spanish: "Iniciar sesión con Apple", .italian: "Accedi con Apple",
        .brazilianPortuguese: "Iniciar sessão com a Apple", .japanese: "Appleでサインイン", .korean: "Apple로 로그인",
        .simplifiedChinese: "通过Apple登录", .traditionalChinese: "使用Apple登入", .arabic: "تسجيل الدخول باستخدام Apple",
        .hebrew: "התחברות באמצעות Apple",
    ]

    func testEveryPageInEveryLanguageSaysSoAndVariesWithAcceptLanguage() throws {
        for language in PageLanguage.allCases {
            for kind in PageKind.allCases {
                XCTAssertNoThrow(try PageTemplate(BuiltInPages.source(kind, in: language)), "\(kind) \(language)")
                let (fields, body) = wire(PageRenderer.builtIn.render(kind, PageContent(
                    status: 403, title: .policyDeniedTitle, message: .policyDeniedMessage, reason: "r",
                    loginURL: Array("/.auth/login".utf8)), for: pageRequest(language.tag)))
                XCTAssertTrue(body.hasPrefix("<!doctype html>\n<html lang=\"\(language.tag)\" dir=\"\(language.direction)\">"),
                              "\(kind) \(language)")
                XCTAssertEqual(fields["content-language"], language.tag)
                XCTAssertEqual(fields["vary"], "Accept-Language")
                XCTAssertTrue(body.contains("<h1>\(HTML.escape(PageText.policyDeniedTitle.text(in: language)))</h1>"))
                XCTAssertFalse(body.contains("{{"), "every placeholder is filled")
                if kind == .signIn {
                    XCTAssertTrue(body.contains("<span>\(Self.applesTitles[language]!)</span></a>"), "\(language)")
                }
            }
        }
        XCTAssertEqual(PageLanguage.allCases.filter { $0.direction == "rtl" }, [.arabic, .hebrew])
    }

    func testEveryLanguageSaysEveryTextInItsOwnWords() {
        for language in PageLanguage.allCases {
            XCTAssertEqual(PageText.signInWithApple.text(in: language), Self.applesTitles[language])
            for text in PageText.allCases {
                let said = text.text(in: language)
                XCTAssertFalse(said.isEmpty, "\(language) \(text)")
                XCTAssertEqual(said.trimmingCharacters(in: .whitespacesAndNewlines), said, "\(language) \(text)")
                XCTAssertFalse(said.contains("{{"), "\(language) \(text)")
                if language != .english && text.rawValue > PageText.signOut.rawValue {
                    XCTAssertNotEqual(said, text.text(in: .english), "\(language) \(text) is not translated")
                }
            }
        }
    }

    func testTheSameLanguageRendersTheSameBytesWhateverTheFieldSaid() {
        let renderer = PageRenderer.builtIn
        let pages = ["ja", "ja-JP", "JA-jp;q=0.9, en;q=0.1", "xx, <script>, ja-Jpan-JP-x-abc;q=1", "de;q=0, ja;q=0.5, *;q=0.1"]
            .map { wire(renderer.signIn(loginURL: Array("/.auth/login".utf8), for: pageRequest($0))) }
        for page in pages {
            XCTAssertEqual(page.body, pages[0].body)
            XCTAssertEqual(page.fields, pages[0].fields)
        }
        XCTAssertEqual(pages[0].fields["content-language"], "ja")
        XCTAssertTrue(pages[0].body.contains("Appleでサインイン"))
    }

    func testHostileFieldsNeverReachThePage() {
        let hostile = [
            "<script>alert(1)</script>", "ja\"><img src=x onerror=alert(1)>", "\"ja\" onload=alert(1)",
            String(repeating: "zz-ZZ;q=0.5, ", count: 900), String(repeating: "a", count: 100_000),
            "en;q=2, en;q=-1, en;q=0.5.5, en;q=NaN", "ja;q=0.5;q=1", "x-klingon, i-default", "ja\u{80}, ar\u{ff}",
            "\u{30c6}\u{30b9}\u{30c8}", "ja;q=0.5\u{200b}",
        ]
        XCTAssertNil(parsedPageRequest(["ja\u{1}"]), "control bytes end at the head parser (400)")
        XCTAssertNil(parsedPageRequest(["ja\u{7f}"]))
        let english = wire(PageRenderer.builtIn.signIn(loginURL: [], for: pageRequest())).body
        for value in hostile {
            let (fields, body) = wire(PageRenderer.builtIn.signIn(loginURL: [], for: pageRequest(value)))
            XCTAssertEqual(fields["content-language"], "en", value.prefix(40).description)
            XCTAssertEqual(body, english, "a field naming no known language changes nothing")
            XCTAssertFalse(body.contains("alert(1)") || body.contains("zz-ZZ") || body.contains("aaaa"))
        }
    }

    func testTheDefaultAndTheOverride() throws {
        let german = try PageRenderer.load(templates: nil, language: .german)
        XCTAssertEqual(wire(german.signIn(loginURL: [], for: pageRequest("sv, nl"))).fields["content-language"], "de")
        XCTAssertEqual(wire(german.signIn(loginURL: [], for: pageRequest())).fields["content-language"], "de")
        XCTAssertEqual(wire(german.signIn(loginURL: [], for: pageRequest("he"))).fields["content-language"], "he")

        let hebrew = try PageRenderer.load(templates: nil, language: .german, languageOverride: .hebrew)
        let (fields, body) = wire(hebrew.proxyError(404, for: pageRequest("ja, en;q=0.5")))
        XCTAssertEqual(fields["content-language"], "he")
        XCTAssertNil(fields["vary"], "an answer that does not depend on Accept-Language does not say it does")
        XCTAssertTrue(body.hasPrefix("<!doctype html>\n<html lang=\"he\" dir=\"rtl\">"))
        XCTAssertTrue(body.contains("<h1>הדף לא נמצא</h1>"))
    }

    func testOperatorTemplatesGetTheLanguage() throws {
        let directory = NSTemporaryDirectory() + "/pages-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { _ = try? FileManager.default.removeItem(atPath: directory) }
        try "<html lang=\"{{ language }}\" dir=\"{{direction}}\"><h1>{{title}}</h1><a>{{sign_in_with_apple}}</a></html>"
            .write(toFile: directory + "/sign_in.html", atomically: true, encoding: .utf8)
        let renderer = try PageRenderer.load(templates: directory)
        let (fields, body) = wire(renderer.signIn(loginURL: [], for: pageRequest("ar-EG, en;q=0.8")))
        XCTAssertEqual(body, "<html lang=\"ar\" dir=\"rtl\"><h1>تسجيل الدخول</h1><a>تسجيل الدخول باستخدام Apple</a></html>")
        XCTAssertEqual(fields["content-language"], "ar")
        XCTAssertEqual(fields["vary"], "Accept-Language")
        XCTAssertEqual(wire(renderer.signIn(loginURL: [], for: pageRequest("zh-TW"))).body,
                       "<html lang=\"zh-Hant\" dir=\"ltr\"><h1>登入</h1><a>使用Apple登入</a></html>")
    }

    /// The per-language values are bound when the pages are built: a request splices only
    /// what varies per request.
    func testLanguageValuesAreBoundAtStart() throws {
        let template = try PageTemplate("<html lang=\"{{language}}\" dir=\"{{direction}}\">{{title}}</html>")
        let bound = template.binding { $0.isPerLanguage ? Array("x".utf8) : nil }
        XCTAssertEqual(bound.segments, [.literal(Array("<html lang=\"x\" dir=\"x\">".utf8)), .placeholder(.title),
                                        .literal(Array("</html>".utf8))])
    }
}
