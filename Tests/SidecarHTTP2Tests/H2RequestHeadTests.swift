import XCTest

@testable import SidecarHTTP2
import SidecarHTTP

final class H2RequestHeadTests: XCTestCase {
    /// The head built from `fields`, written as HTTP/1.1 text to compare (the codec itself
    /// writes no text), or the error a parser would have answered with.
    private func head(_ fields: [(String, String)], body: Bool = false, max: Int = 16 * 1024) throws -> String {
        var builder = H2RequestHead(maxBytes: max)
        var arrays = HeadArrays()
        builder.reset(reusing: &arrays)
        for (name, value) in fields {
            let fits = Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { v in builder.add(name: n, value: v) } }
            if !fits { throw H2RequestHead.Failure.tooLarge }
        }
        switch try builder.finish(bodyFollows: body) {
        case .refused(let error):
            throw error
        case .request(let head):
            var text = "\(head.string(head.methodRange)) \(head.string(head.target)) HTTP/1.1\r\n"
            for field in head.fields { text += "\(head.string(field.name)): \(head.string(field.value))\r\n" }
            if head.framing == .chunked { text += "transfer-encoding: chunked\r\n" }
            return text + "\r\n"
        }
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

    func testFieldsAreHeldToTheHTTP11Grammar() throws {
        // What RFC 9113 makes malformed (a stream error) is refused before the HTTP/1.1 grammar
        // is asked; what HTTP/2 lets through and a strict HTTP/1.1 reader refuses gets the
        // status the parser would give.
        XCTAssertThrowsError(try head(basics + [("x", "a\u{1}b")])) { XCTAssertEqual($0 as? H2RequestHead.Failure, .malformed) }
        XCTAssertThrowsError(try head(basics + [("x y", "1")])) { XCTAssertEqual($0 as? H2RequestHead.Failure, .malformed) }
        XCTAssertThrowsError(try head(basics + [("content-length", "1, 2")], body: true)) {
            XCTAssertEqual($0 as? H2RequestHead.Failure, .malformed)
        }
        XCTAssertThrowsError(try head([(":method", "GET"), (":scheme", "https"), (":authority", "a b"), (":path", "/")])) {
            XCTAssertEqual($0 as? HTTPHeadError, .invalidHost)
        }
        XCTAssertThrowsError(try head([(":method", "G(T"), (":scheme", "https"), (":authority", "a"), (":path", "/")]))
        XCTAssertThrowsError(try head([(":method", "GET"), (":scheme", "https"), (":authority", "a"), (":path", "/a#b")]))
        let many = (0..<100).map { ("x-\($0)", "1") }
        XCTAssertThrowsError(try head(basics + many)) { XCTAssertEqual($0 as? HTTPHeadError, .tooManyFields) }
    }

    func testTheHeadIsTheOneAParserBuilds() throws {
        var builder = H2RequestHead(maxBytes: 16 * 1024)
        var arrays = HeadArrays()
        builder.reset(reusing: &arrays)
        for (name, value) in basics + [("content-length", "3"), ("cookie", "a=1"), ("cookie", "b=2")] {
            _ = Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { v in builder.add(name: n, value: v) } }
        }
        guard case .request(let head) = try builder.finish(bodyFollows: true) else { return XCTFail("refused") }
        XCTAssertEqual(head.method, .get)
        XCTAssertEqual(head.string(head.path), "/a")
        XCTAssertEqual(head.query.map(head.string), "b=1")
        XCTAssertEqual(head.host.map(head.string), "app.example.com")
        XCTAssertEqual(head.framing, .contentLength(3))
        XCTAssertEqual(head.firstValueString("cookie"), "a=1; b=2")
        XCTAssertTrue(head.connection.keepAlive)
    }

    /// RFC 9113 §8.2–§8.3, held by the codec itself (libnghttp2's HTTP messaging checks are off).
    func testWhatRFC9113MakesMalformed() {
        let malformed: [[(String, String)]] = [
            basics + [("X-Auth-Email", "a")],  // uppercase (§8.2.1)
            basics + [("", "1")],  // empty name
            basics + [("x", " lead")], basics + [("x", "trail\t")],  // edge whitespace
            basics + [("x", "a\u{0}b")], basics + [("x", "a\rb")], basics + [("x", "a\nb")], basics + [("x", "a\u{7f}")],
            basics + [("connection", "close")], basics + [("keep-alive", "1")], basics + [("proxy-connection", "x")],
            basics + [("transfer-encoding", "chunked")], basics + [("upgrade", "h2c")],  // connection-specific (§8.2.2)
            basics + [("te", "gzip")], basics + [("te", "trailers, gzip")],
            basics + [(":path", "/again")], basics + [(":method", "POST")],  // a pseudo-header twice
            [(":method", "GET"), (":scheme", "https"), ("x", "1"), (":authority", "a"), (":path", "/")],  // after a regular field
            [(":method", "GET"), (":scheme", "https"), (":authority", ""), (":path", "/")],
            [(":method", "GET"), (":scheme", "https"), (":authority", "a "), (":path", "/")],
            [(":method", ""), (":scheme", "https"), (":authority", "a"), (":path", "/")],
            basics + [(":status", "200")], basics + [(":protocol", "websocket")],
            basics + [("host", "")],
            basics + [("content-length", "3"), ("content-length", "3")], basics + [("content-length", "+3")],
            basics + [("content-length", "")], basics + [("content-length", "99999999999999999999")],
        ]
        for fields in malformed {
            XCTAssertThrowsError(try head(fields, body: true), "\(fields.suffix(2))") {
                XCTAssertEqual($0 as? H2RequestHead.Failure, .malformed, "\(fields.suffix(2))")
            }
        }
        // A content-length no DATA can match: the head ended the stream.
        XCTAssertThrowsError(try head(basics + [("content-length", "5")], body: false)) {
            XCTAssertEqual($0 as? H2RequestHead.Failure, .malformed)
        }
        XCTAssertNoThrow(try head(basics + [("content-length", "0")], body: false))
        XCTAssertNoThrow(try head(basics + [("te", "Trailers"), ("x", "a b\tc"), ("y", ""), ("z", "caf\u{e9}")]))
    }

    func testTrailerFields() {
        func valid(_ name: String, _ value: String) -> Bool {
            Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { v in H2FieldRules.isValidTrailer(name: n, value: v) } }
        }
        XCTAssertTrue(valid("grpc-status", "0"))
        XCTAssertTrue(valid("te", "trailers"))
        XCTAssertTrue(valid("content-length", "1"))  // dropped on the way, as from HTTP/1.1 trailers
        for (name, value) in [(":status", "200"), ("Grpc-Status", "0"), ("x", " 1"), ("x", "a\nb"), ("transfer-encoding", "chunked"),
                              ("connection", "close"), ("te", "gzip")] {
            XCTAssertFalse(valid(name, value), "\(name): \(value)")
        }
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
