import XCTest
import SidecarHTTP

final class RequestHeadTests: XCTestCase {
    func testSimpleGet() throws {
        let bytes = crlf("GET /a/b?x=1 HTTP/1.1\nHost: example.com\nAccept: */*\n\nBODY")
        let head = try XCTUnwrap(parseRequest(bytes).get())
        XCTAssertEqual(head.method, .get)
        XCTAssertEqual(head.string(head.methodRange), "GET")
        XCTAssertEqual(head.string(head.target), "/a/b?x=1")
        XCTAssertEqual(head.string(head.path), "/a/b")
        XCTAssertEqual(head.query.map(head.string), "x=1")
        XCTAssertEqual(head.targetForm, .origin)
        XCTAssertEqual(head.version, .http11)
        XCTAssertEqual(head.host.map(head.string), "example.com")
        XCTAssertEqual(head.fields.count, 2)
        XCTAssertEqual(head.string(head.fields[1].name), "Accept")
        XCTAssertEqual(head.string(head.fields[1].value), "*/*")
        XCTAssertEqual(head.framing, .none)
        XCTAssertEqual(head.connection, ConnectionSemantics(keepAlive: true, upgrade: false, expectContinue: false, listsFieldNames: false))
        XCTAssertEqual(head.headLength, bytes.count - 4)
        XCTAssertEqual(head.firstValueString("accept"), "*/*")
    }

    func testValueIsTrimmedAndHTABAllowedInside() throws {
        let head = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.1\nHost: h\nX-A: \t a\tb  \t\nX-B:\n\n")).get())
        XCTAssertEqual(head.firstValueString("x-a"), "a\tb")
        XCTAssertEqual(head.firstValueString("x-b"), "")
    }

    func testNeedsMoreDataUntilEndOfHead() throws {
        let full = crlf("POST /upload HTTP/1.1\nHost: h\nContent-Length: 5\n\nhello")
        let headLen = full.count - 5
        for n in 0..<headLen {
            XCTAssertNil(try parseRequest(Array(full[..<n])).get(), "prefix \(n)")
        }
        let head = try XCTUnwrap(parseRequest(full).get())
        XCTAssertEqual(head.headLength, headLen)
        XCTAssertEqual(head.framing, .contentLength(5))
    }

    func testLeadingEmptyLinesAreSkippedAndCounted() throws {
        let head = try XCTUnwrap(parseRequest(crlf("\n\nGET / HTTP/1.1\nHost: h\n\n")).get())
        XCTAssertEqual(head.string(head.methodRange), "GET")
        XCTAssertEqual(head.headLength, 4 + 27)
        XCTAssertNil(try parseRequest(crlf("\n\n\n")).get(), "only empty lines: wait")
    }

    func testTargetForms() throws {
        let abs = try XCTUnwrap(parseRequest(crlf("GET HTTP://Example.com:8080/p?q HTTP/1.1\nHost: x\n\n")).get())
        XCTAssertEqual(abs.targetForm, .absolute)
        XCTAssertEqual(abs.authority.map(abs.string), "Example.com:8080")
        XCTAssertEqual(abs.string(abs.path), "/p")
        XCTAssertEqual(abs.query.map(abs.string), "q")
        let noPath = try XCTUnwrap(parseRequest(crlf("GET https://h?q HTTP/1.1\nHost: x\n\n")).get())
        XCTAssertEqual(noPath.path.count, 0)
        let star = try XCTUnwrap(parseRequest(crlf("OPTIONS * HTTP/1.1\nHost: x\n\n")).get())
        XCTAssertEqual(star.targetForm, .asterisk)
        XCTAssertEqual(star.method, .options)
    }

    func testMethods() throws {
        let cases: [(String, HTTPMethod)] = [
            ("GET", .get), ("HEAD", .head), ("POST", .post), ("PUT", .put), ("DELETE", .delete),
            ("OPTIONS", .options), ("PATCH", .patch), ("TRACE", .trace), ("PROPFIND", .other),
            ("get", .other),
        ]
        for (text, method) in cases {
            let head = try XCTUnwrap(parseRequest(crlf("\(text) / HTTP/1.1\nHost: h\n\n")).get())
            XCTAssertEqual(head.method, method, text)
        }
    }

    func testHTTP10() throws {
        let plain = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.0\n\n")).get())
        XCTAssertEqual(plain.version, .http10)
        XCTAssertNil(plain.host)
        XCTAssertFalse(plain.connection.keepAlive)
        let ka = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.0\nConnection: Keep-Alive\n\n")).get())
        XCTAssertTrue(ka.connection.keepAlive)
        let up = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.0\nConnection: upgrade\nUpgrade: websocket\nExpect: 100-continue\n\n")).get())
        XCTAssertFalse(up.connection.upgrade, "Upgrade is ignored in HTTP/1.0")
        XCTAssertFalse(up.connection.expectContinue, "100-continue is ignored in HTTP/1.0")
    }

    func testConnectionSemantics() throws {
        let close = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.1\nHost: h\nConnection: keep-alive, CLOSE\n\n")).get())
        XCTAssertFalse(close.connection.keepAlive)
        let up = try XCTUnwrap(parseRequest(crlf("GET /ws HTTP/1.1\nHost: h\nConnection: keep-alive, Upgrade\nUpgrade: websocket\n\n")).get())
        XCTAssertTrue(up.connection.upgrade)
        let noUpgradeField = try XCTUnwrap(parseRequest(crlf("GET /ws HTTP/1.1\nHost: h\nConnection: Upgrade\n\n")).get())
        XCTAssertFalse(noUpgradeField.connection.upgrade)
        let expect = try XCTUnwrap(parseRequest(crlf("PUT /x HTTP/1.1\nHost: h\nExpect: 100-Continue\nContent-Length: 3\n\n")).get())
        XCTAssertTrue(expect.connection.expectContinue)
    }

    func testFraming() throws {
        let cases: [(String, BodyFraming)] = [
            ("Content-Length: 0", .none),
            ("Content-Length: 42", .contentLength(42)),
            ("Content-Length: 007", .contentLength(7)),
            ("Content-Length: 5\nContent-Length: 5", .contentLength(5)),
            ("Content-Length: 5, 5", .contentLength(5)),
            ("Content-Length: 18446744073709551615", .contentLength(UInt64.max)),
            ("Transfer-Encoding: chunked", .chunked),
            ("Transfer-Encoding:  Chunked ", .chunked),
            ("", .none),
        ]
        for (field, framing) in cases {
            let text = "POST / HTTP/1.1\nHost: h\n" + (field.isEmpty ? "" : field + "\n") + "\n"
            let head = try XCTUnwrap(parseRequest(crlf(text)).get(), field)
            XCTAssertEqual(head.framing, framing, field)
        }
    }

    func testLimits() {
        let limits = HTTPHeadLimits(maxHeadBytes: 64, maxFields: 3)
        XCTAssertEqual(try parseRequest(crlf("GET / HTTP/1.1\nHost: h\nA: b\nC: d\n\n"), limits: limits).get()?.fields.count, 3)
        XCTAssertEqual(parseRequest(crlf("GET / HTTP/1.1\nHost: h\nA: b\nC: d\nE: f\n\n"), limits: limits).error, .tooManyFields)
        let long = crlf("GET /" + String(repeating: "a", count: 70) + " HTTP/1.1\nHost: h\n\n")
        XCTAssertEqual(parseRequest(long, limits: limits).error, .headTooLarge)
        XCTAssertEqual(parseRequest(Array(long[..<63]), limits: limits).error, nil, "still under the limit")
        XCTAssertEqual(parseRequest(Array(long[..<64]), limits: limits).error, .headTooLarge)
        XCTAssertEqual(HTTPHeadError.headTooLarge.status, 431)
        XCTAssertEqual(HTTPHeadError.tooManyFields.status, 431)
    }
}

extension Result {
    var error: Failure? { if case .failure(let e) = self { return e } else { return nil } }
}
