import XCTest

@testable import SidecarProxy

/// The operator template language of known placeholders only, errors at the
/// right line and column, style elements hashed for the CSP.
final class PageTemplateTests: XCTestCase {
    private func error(_ text: String) -> PageTemplateError? {
        do {
            _ = try PageTemplate(text)
            return nil
        } catch {
            return error
        }
    }

    func testEveryKnownPlaceholderParsesWithOrWithoutSpaces() throws {
        let template = try PageTemplate("<p>{{status}} {{ title }} {{message}}{{reason}}{{request_id}}{{login_url}}{{user_name}}</p>")
        let placeholders = template.segments.compactMap { if case .placeholder(let p) = $0 { p } else { nil } }
        XCTAssertEqual(placeholders, [.status, .title, .message, .reason, .requestId, .loginURL, .userName])
        XCTAssertEqual(template.segments.first, .literal(Array("<p>".utf8)))
        XCTAssertEqual(template.segments.last, .literal(Array("</p>".utf8)))
    }

    func testAnUnknownPlaceholderIsRefusedAtItsLineAndColumn() {
        let failure = error("<!doctype html>\n<h1>{{title}}</h1>\n  <p>héllo {{mesage}}</p>\n")
        XCTAssertEqual(failure?.line, 3)
        XCTAssertEqual(failure?.column, 12, "columns count characters, not UTF-8 bytes")
        XCTAssertTrue(failure?.message.contains("unknown placeholder {{mesage}}") ?? false, "\(String(describing: failure))")
        XCTAssertTrue(failure?.description.hasPrefix("3:12: ") ?? false)
    }

    func testAnUnclosedPlaceholderIsRefused() {
        let failure = error("<p>ok</p>\n<p>{{title</p>\n}}")
        XCTAssertEqual(failure.map { [$0.line, $0.column] }, [2, 4])
        XCTAssertTrue(failure?.message.contains("unclosed") ?? false)
    }

    func testSingleBracesAndTextWithoutPlaceholdersPassUnchanged() throws {
        let text = "<style>a{color:red}</style><p>{ not } a placeholder {</p>"
        let template = try PageTemplate(text)
        XCTAssertEqual(template.segments, [.literal(Array(text.utf8))])
    }

    func testStyleElementsAreHashedAndMayHoldNoPlaceholder() throws {
        // echo -n 'a{color:red}' | openssl dgst -sha256 -binary | base64
        let template = try PageTemplate("<STYLE media=\"all\">a{color:red}</style><p>{{title}}</p>")
        XCTAssertEqual(template.styleHashes, ["6hWWMOcF+mJesSJGYhmK2lkIIEw9Xc5XKGLPVzh8yxs="])
        let failure = error("<style>\nb{color:{{title}}}\n</style>")
        XCTAssertEqual(failure.map { [$0.line, $0.column] }, [2, 9])
        XCTAssertNotNil(error("<style>a{}"), "an unclosed style element")
    }
}
