import XCTest

import SidecarCrypto
@testable import SidecarHTTP
@testable import SidecarProxy

/// The one renderer: built-in pages follow the design, every value is escaped,
/// the request id is spliced in as written, and the operator's files replace pages by name.
final class PageRendererTests: XCTestCase {
    /// The response as written to the client: head fields (lower-cased names) and body.
    private func wire(_ answer: LocalResponse, requestId: String = "req-42") -> (fields: [String: String], body: String) {
        var out = ByteBuilder()
        answer.write(keepAlive: true, headOnly: false, requestId: Array(requestId.utf8), into: &out)
        let text = String(decoding: out.bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        var fields: [String: String] = [:]
        for line in parts[0].split(separator: "\r\n").dropFirst() {
            let colon = line.firstIndex(of: ":")!
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = parts.dropFirst().joined(separator: "\r\n\r\n")
        XCTAssertEqual(Int(fields["content-length"] ?? ""), body.utf8.count, "Content-Length counts the spliced id")
        return (fields, body)
    }

    func testEveryBuiltInPageFollowsTheDesign() {
        for kind in PageKind.allCases {
            let source = BuiltInPages.source(kind, in: .english)
            XCTAssertNoThrow(try PageTemplate(source), "\(kind)")
            let (fields, body) = wire(PageRenderer.builtIn.render(kind, PageContent(
                status: 400, title: .otherErrorTitle, message: .otherErrorMessage, reason: "r",
                loginURL: Array("/.auth/login".utf8)), for: pageRequest()))
            XCTAssertTrue(body.hasPrefix("<!doctype html>\n<html lang=\"en\" dir=\"ltr\">"), "\(kind)")
            XCTAssertTrue(body.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"))
            XCTAssertTrue(body.contains("<title>Something went wrong</title>"))
            XCTAssertTrue(body.contains("@media (prefers-color-scheme: dark)"))
            for external in ["<link", "<script", "src=", "url(", "@import", "style=\""] {
                XCTAssertFalse(body.contains(external), "\(kind) has \(external)")
            }
            XCTAssertEqual(fields["content-type"], "text/html; charset=utf-8")
            XCTAssertEqual(fields["cache-control"], "no-store")
            XCTAssertEqual(fields["x-content-type-options"], "nosniff")
            XCTAssertEqual(fields["referrer-policy"], "no-referrer")
            let csp = fields["content-security-policy"] ?? ""
            XCTAssertTrue(csp.hasPrefix("default-src 'none'; style-src 'sha256-"), csp)
            XCTAssertFalse(csp.contains("unsafe"), csp)
        }
    }

    func testTheStyleHashInTheCSPIsTheStyleSheetsDigest() throws {
        let csp = wire(PageRenderer.builtIn.signIn(loginURL: [], for: pageRequest())).fields["content-security-policy"] ?? ""
        let digest = Base64.encode(SHA256.hash(Array(PageDesign.styleSheet.utf8)))
        XCTAssertTrue(csp.contains("'sha256-\(digest)'"), csp)
    }

    func testValuesAreEscapedAndTheRequestIdIsSpliced() {
        let page = PageRenderer.builtIn.render(.errorWithSignIn, PageContent(
            status: 400, title: .ruleRefusedTitle, message: .ruleRefusedMessage,
            reason: "<script>alert(1)</script> Tom & \"Jerry\" 'x'", loginURL: Array("/.auth/login?rd=%2F\"><x".utf8)),
            for: pageRequest())
        let body = wire(page, requestId: "abc.DEF-1_2").body
        XCTAssertFalse(body.contains("<script>"))
        XCTAssertTrue(body.contains("Ask the site&#39;s owner"), "the texts are escaped too")
        XCTAssertTrue(body.contains("<code>&lt;script&gt;alert(1)&lt;/script&gt; Tom &amp; &quot;Jerry&quot; &#39;x&#39;</code>"))
        XCTAssertTrue(body.contains("href=\"/.auth/login?rd=%2F&quot;&gt;&lt;x\""))
        XCTAssertTrue(body.contains("Request ID <code>abc.DEF-1_2</code>"))
        XCTAssertEqual(wire(page, requestId: "a-much-longer-request-id-0000000001").body.count,
                       body.count + "a-much-longer-request-id-0000000001".count - "abc.DEF-1_2".count)
    }

    func testTheSignInPageShowsApplesButtonLinkingToTheLogin() {
        let (_, body) = wire(PageRenderer.builtIn.signIn(
            loginURL: Array("/.auth/login?rd=%2Fa%3Fb%3D1".utf8), for: pageRequest()))
        XCTAssertTrue(body.contains("<a class=\"apple\" href=\"/.auth/login?rd=%2Fa%3Fb%3D1\" id=\"sign-in-with-apple\"><svg"))
        XCTAssertTrue(body.contains("<span>Sign in with Apple</span></a>"))
        XCTAssertEqual(body.components(separatedBy: "Sign in with Apple</span>").count, 2, "one button")
    }

    func testTheCancelPageSaysOnlyThatItWasCancelled() {
        let body = wire(PageRenderer.builtIn.loginFailure(.appleCancelled, loginURL: [], for: pageRequest())).body
        XCTAssertTrue(body.contains("<h1>Sign-in cancelled</h1>"))
        XCTAssertTrue(body.contains("<p>You cancelled signing in with Apple.</p>"))
        XCTAssertFalse(body.contains("expired"))
        XCTAssertFalse(body.contains("used already"))
    }

    func testOperatorTemplatesReplacePagesByNameAndKeepTheHeaders() throws {
        let directory = try temporaryDirectory()
        try write("<!doctype html><html lang=\"en\"><title>{{title}}</title><style>p{margin:0}</style>"
                  + "<p id=x>{{message}} [{{reason}}] {{request_id}} {{user_name}}</p></html>", to: directory + "/error.html")
        try write("# notes: not a template\n", to: directory + "/README.md")
        let renderer = try PageRenderer.load(templates: directory)
        XCTAssertEqual(renderer.replacedFiles, ["error.html"])
        let (fields, body) = wire(renderer.proxyError(405, for: pageRequest()), requestId: "r1")
        XCTAssertEqual(fields["content-security-policy"]?.contains("'sha256-"), true)
        XCTAssertFalse(fields["content-security-policy"]?.contains(
            Base64.encode(SHA256.hash(Array(PageDesign.styleSheet.utf8)))) ?? true,
            "the operator's style, not the built-in one")
        XCTAssertTrue(body.contains("<p id=x>This address does not accept"), body)
        XCTAssertTrue(body.contains("[method_not_allowed] r1 </p>"), body)
        XCTAssertTrue(wire(renderer.signIn(loginURL: [], for: pageRequest())).body.contains("Sign in with Apple"), "missing files stay built in")
    }

    func testOperatorTemplateProblemsNameFileLineAndColumn() throws {
        let directory = try temporaryDirectory()
        try write("<p>\n  {{title}} {{nmae}}</p>", to: directory + "/signed_out.html")
        try write("<p>hi</p>", to: directory + "/welcome.html")
        XCTAssertThrowsError(try PageRenderer.load(templates: directory)) { error in
            let lines = (error as? OperatorTemplateErrors)?.lines ?? []
            XCTAssertEqual(lines.count, 2, "\(lines)")
            XCTAssertTrue(lines.contains { $0.hasPrefix(directory + "/signed_out.html:2:13: unknown placeholder {{nmae}}") }, "\(lines)")
            XCTAssertTrue(lines.contains { $0.hasPrefix(directory + "/welcome.html: not a page template name") }, "\(lines)")
        }
    }

    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "/pages-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        addTeardownBlock { _ = try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    private func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
