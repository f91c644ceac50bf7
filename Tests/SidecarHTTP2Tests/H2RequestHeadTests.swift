import XCTest

@testable import SidecarHTTP2

final class H2RequestHeadTests: XCTestCase {
    private func head(_ fields: [(String, String)], body: Bool = false, max: Int = 16 * 1024) throws(H2RequestHead.Failure) -> String {
        var builder = H2RequestHead(maxBytes: max)
        for (name, value) in fields {
            let fits = Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { v in builder.add(name: n, value: v) } }
            if !fits { throw .tooLarge }
        }
        return String(decoding: try builder.http1Head(hasBody: body), as: UTF8.self)
    }

    private let basics = [(":method", "GET"), (":scheme", "https"), (":authority", "app.example.com"), (":path", "/a?b=1")]

    func testTranslatesPseudoHeadersToARequestLineAndHost() throws {
        XCTAssertEqual(
            try head(basics + [("accept", "text/html")]),
            "GET /a?b=1 HTTP/1.1\r\nhost: app.example.com\r\naccept: text/html\r\n\r\n")
    }

    func testJoinsCookieCrumbsIntoOneField() throws {
        let text = try head(basics + [("cookie", "a=1"), ("x", "y"), ("cookie", "b=2"), ("cookie", "c=3")])
        XCTAssertTrue(text.contains("cookie: a=1; b=2; c=3\r\n"), text)
        XCTAssertEqual(text.components(separatedBy: "cookie:").count, 2)
    }

    func testABodyWithoutContentLengthIsFramedChunked() throws {
        XCTAssertTrue(try head(basics, body: true).contains("transfer-encoding: chunked\r\n"))
        XCTAssertFalse(try head(basics + [("content-length", "3")], body: true).contains("transfer-encoding"))
        XCTAssertFalse(try head(basics, body: false).contains("transfer-encoding"))
    }

    func testHostMustAgreeWithAuthority() throws {
        XCTAssertNoThrow(try head(basics + [("host", "APP.example.com")]))
        XCTAssertThrowsError(try head(basics + [("host", "evil.example")]))
        let noAuthority = [(":method", "GET"), (":scheme", "https"), (":path", "/")]
        XCTAssertTrue(try head(noAuthority + [("host", "h.example")]).contains("host: h.example\r\n"))
        XCTAssertThrowsError(try head(noAuthority))
        XCTAssertThrowsError(try head(basics + [("host", "app.example.com"), ("host", "app.example.com")]))
    }

    func testRefusesWhatIsNotAnOriginFormRequest() {
        XCTAssertThrowsError(try head([(":method", "CONNECT"), (":scheme", "https"), (":authority", "a"), (":path", "/")]))
        XCTAssertThrowsError(try head([(":method", "OPTIONS"), (":scheme", "https"), (":authority", "a"), (":path", "*")]))
        XCTAssertThrowsError(try head([(":method", "GET"), (":authority", "a"), (":path", "/")]))
        XCTAssertThrowsError(try head(basics + [(":protocol", "websocket")]))
    }

    func testDropsTeTrailers() throws {
        XCTAssertFalse(try head(basics + [("te", "trailers")]).contains("te:"))
    }

    func testTheDecodedListIsBounded() {
        XCTAssertThrowsError(try head(basics + [("x", String(repeating: "a", count: 2000))], max: 1024)) {
            XCTAssertEqual($0 as? H2RequestHead.Failure, .tooLarge)
        }
    }

    func testPrefaceMatching() {
        let preface = HTTP2Preface.bytes
        preface.withUnsafeBytes { XCTAssertEqual(HTTP2Preface.match($0), .complete) }
        Array(preface[0..<5]).withUnsafeBytes { XCTAssertEqual(HTTP2Preface.match($0), .partial) }
        Array("PRIX".utf8).withUnsafeBytes { XCTAssertEqual(HTTP2Preface.match($0), .no) }
        Array("POST / HTTP/1.1\r\n".utf8).withUnsafeBytes { XCTAssertEqual(HTTP2Preface.match($0), .no) }
    }
}
