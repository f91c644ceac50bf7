import XCTest
import SidecarHTTP

final class ResponseHeadTests: XCTestCase {
    func testFramingPerRFC9112Section6_3() throws {
        let cases: [(String, HTTPMethod, BodyFraming, Bool)] = [
            ("HTTP/1.1 200 OK\nContent-Length: 12\n\n", .get, .contentLength(12), true),
            ("HTTP/1.1 200 OK\nContent-Length: 12\n\n", .head, .none, true),
            ("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n", .get, .chunked, true),
            ("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n", .head, .none, true),
            ("HTTP/1.1 200 OK\n\n", .get, .untilClose, false),
            ("HTTP/1.1 200 OK\nContent-Length: 0\n\n", .post, .none, true),
            ("HTTP/1.1 204 No Content\n\n", .get, .none, true),
            ("HTTP/1.1 304 Not Modified\nContent-Length: 50\n\n", .get, .none, true),
            ("HTTP/1.1 100 Continue\n\n", .post, .none, true),
            ("HTTP/1.1 103 Early Hints\nLink: </a>\n\n", .get, .none, true),
            ("HTTP/1.0 200 OK\nContent-Length: 3\n\n", .get, .contentLength(3), false),
            ("HTTP/1.0 200 OK\nContent-Length: 3\nConnection: keep-alive\n\n", .get, .contentLength(3), true),
            ("HTTP/1.1 200 OK\nContent-Length: 3\nConnection: close\n\n", .get, .contentLength(3), false),
            ("HTTP/1.1 200\n\n", .get, .untilClose, false),
            ("HTTP/1.1 404 \nContent-Length: 1\n\n", .get, .contentLength(1), true),
        ]
        for (text, method, framing, keepAlive) in cases {
            let head = try XCTUnwrap(parseResponse(crlf(text), method: method).get(), text)
            XCTAssertEqual(head.framing, framing, text)
            XCTAssertEqual(head.connection.keepAlive, keepAlive, text)
        }
    }

    func testStatusLineParts() throws {
        let head = try XCTUnwrap(parseResponse(crlf("HTTP/1.1 404 Not  Found\nServer: x\n\n")).get())
        XCTAssertEqual(head.status, 404)
        XCTAssertEqual(head.string(head.reason), "Not  Found")
        XCTAssertEqual(head.version, .http11)
        XCTAssertEqual(head.firstValueString("server"), "x")
        XCTAssertFalse(head.isInterim)
        XCTAssertTrue(try XCTUnwrap(parseResponse(crlf("HTTP/1.1 100 Continue\n\n")).get()).isInterim)
    }

    func testSwitchingProtocols() throws {
        let head = try XCTUnwrap(parseResponse(crlf("HTTP/1.1 101 Switching Protocols\nUpgrade: websocket\nConnection: Upgrade\n\n")).get())
        XCTAssertTrue(head.isSwitchingProtocols)
        XCTAssertFalse(head.isInterim)
        XCTAssertTrue(head.connection.upgrade)
        XCTAssertEqual(head.framing, .none)
    }

    func testNeedsMoreData() throws {
        XCTAssertNil(try parseResponse(crlf("HTTP/1.1 200 OK\nContent-Le")).get())
    }

    func testRejections() {
        let cases: [(String, HTTPHeadError)] = [
            ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
            ("HTTP/1.1 204 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
            ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", .conflictingContentLength),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding),
            ("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
            ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", .obsFold),
            ("HTTP/1.1 200 OK\nX: y\r\n\r\n", .bareLF),
            ("HTTP/1.1 200 OK\r\nX : y\r\n\r\n", .whitespaceBeforeColon),
            ("HTTP/1.1 200 O\u{0}K\r\n\r\n", .controlCharacter),
            ("HTTP/1.1 20 OK\r\n\r\n", .malformedStatusLine),
            ("HTTP/1.1 2000 OK\r\n\r\n", .malformedStatusLine),
            ("HTTP/1.1 099 OK\r\n\r\n", .malformedStatusLine),
            ("HTTP/1.1  200 OK\r\n\r\n", .malformedStatusLine),
            ("HTTP/2 200 OK\r\n\r\n", .malformedStatusLine),
            ("HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion),
            ("http/1.1 200 OK\r\n\r\n", .malformedStatusLine),
            ("\r\nHTTP/1.1 200 OK\r\n\r\n", .malformedStatusLine),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(parseResponse(Array(text.utf8)).error, expected, text.debugDescription)
        }
    }
}
