import XCTest
import SidecarHTTP

final class HeadWriterTests: XCTestCase {
    let identity = HeaderNameSet(["X-Auth-User-Id", "x-auth-email"])
    let identityForwarding = FieldForwarding(dropping: ["X-Auth-User-Id", "x-auth-email"])

    func testHeaderNameSetFoldsCaseAndUnderscores() {
        for name in ["X-Auth-User-Id", "x-auth-user-id", "X_Auth_User_Id", "x_AUTH-user_ID", "X-AUTH-EMAIL"] {
            XCTAssertTrue(identity.contains(name), name)
        }
        for name in ["X-Auth-User", "X-Auth-User-Idx", "", "X-Auth-User-Id "] {
            XCTAssertFalse(identity.contains(name), name)
        }
        XCTAssertTrue(HeaderNameSet.hopByHop.contains("Proxy-Authorization"))
        XCTAssertTrue(HeaderNameSet.hopByHop.contains("Transfer_Encoding"))
        XCTAssertFalse(HeaderNameSet.hopByHop.contains("Proxy"))
        let long = String(repeating: "a", count: 80)
        XCTAssertTrue(HeaderNameSet([long]).contains(long.uppercased()))
    }

    func testHeaderNameSetWithSeveralNamesOfOneLength() {
        let long = String(repeating: "b", count: 70)
        let set = HeaderNameSet(["X-Auth-Email", "X-Auth-Names", "x-auth-email", "X-Forwarded-*", "a", long])
        for name in ["x_auth_email", "X-AUTH-NAMES", "A", "x-forwarded-anything", "X_Forwarded-", long.uppercased()] {
            XCTAssertTrue(set.contains(name), name)
        }
        for name in ["X-Auth-Emaix", "Content-Type", "b", "X-Forwarded", String(repeating: "b", count: 71), ""] {
            XCTAssertFalse(set.contains(name), name)
        }
        XCTAssertTrue(HeaderNameSet(["*"]).contains("Anything"))
        XCTAssertFalse(HeaderNameSet(["x-*"]).contains("Y-X"))
        XCTAssertTrue(HeaderNameSet.empty.isEmpty)
        XCTAssertFalse(HeaderNameSet(["Proxy-*"]).isEmpty)
    }

    func testForwardedRequestHead() throws {
        let request = crlf("""
            POST /public/%2e%2e/admin/./x%7e%40?q=%2e&b HTTP/1.1
            Host: app.example.com
            X-Auth-User-Id: forged
            X_Auth_User_Id: forged2
            Connection: keep-alive, X-Secret-Hop
            X-Secret-Hop: 1
            Keep-Alive: timeout=5
            TE: trailers
            Proxy-Authorization: Basic x
            Content-Length: 5, 5
            Content-Length: 5
            Accept: */*


            """)
        let head = try XCTUnwrap(parseRequest(request).get())
        var writer = HeadWriter()
        try writer.appendRequestLine(for: head)
        writer.appendFields(of: head, forwarding: identityForwarding)
        try writer.appendField(name: "X-Auth-User-Id", value: "001234.abc")
        writer.finish()
        let text = String(decoding: writer.bytes, as: UTF8.self)
        XCTAssertEqual(text, """
            POST /admin/x~%40?q=%2e&b HTTP/1.1\r
            Host: app.example.com\r
            Content-Length: 5\r
            Accept: */*\r
            X-Auth-User-Id: 001234.abc\r
            \r

            """)
        // Round trip: what we emit parses to the same framing.
        let again = try XCTUnwrap(parseRequest(writer.bytes).get())
        XCTAssertEqual(again.framing, head.framing)
        XCTAssertEqual(again.firstValueString("x-auth-user-id"), "001234.abc")
    }

    func testHeadBufferWritesWhatHeadWriterWritesIntoReservedMemory() throws {
        let heads = [
            "POST /x HTTP/1.1\nHost: h\nX_Auth_User_Id: f\nConnection: keep-alive, X-Hop\nX-Hop: 1\nContent-Length: 007\nA:  b c \n\n",
            "GET /ws HTTP/1.1\nHost: h\nConnection: Upgrade\nUpgrade: websocket\nProxy-X: 1\nTE: trailers\n\n",
            "GET / HTTP/1.1\nHost: h\n\n",
        ]
        for text in heads {
            let head = try XCTUnwrap(parseRequest(crlf(text)).get())
            var writer = HeadWriter()
            writer.appendFields(of: head, forwarding: identityForwarding, keepUpgrade: head.connection.upgrade)
            let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: head.storage.count + 21, alignment: 1)
            defer { memory.deallocate() }
            var buffer = HeadBuffer(memory.baseAddress!, capacity: memory.count)
            head.withView {
                buffer.appendFields(of: $0, connection: head.connection, forwarding: identityForwarding, keepUpgrade: head.connection.upgrade)
            }
            XCTAssertEqual(Array(buffer.written), writer.bytes, text)
            XCTAssertLessThanOrEqual(buffer.count, buffer.capacity)
        }
    }

    func testContentLengthLosesItsLeadingZeros() throws {
        for (sent, written) in [("010", "10"), ("0005, 5", "5"), ("0", "0"), ("000", "0")] {
            let head = try XCTUnwrap(parseRequest(crlf("POST / HTTP/1.1\nHost: h\nContent-Length: \(sent)\n\n")).get())
            var writer = HeadWriter()
            writer.appendFields(of: head, forwarding: identityForwarding)
            XCTAssertEqual(String(decoding: writer.bytes, as: UTF8.self), "Host: h\r\nContent-Length: \(written)\r\n", sent)
        }
    }

    func testChunkedRequestReframedAndUpgradeKept() throws {
        let chunked = try XCTUnwrap(parseRequest(crlf("PUT /u HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n")).get())
        var w = HeadWriter()
        try w.appendRequestLine(for: chunked)
        w.appendFields(of: chunked, forwarding: .hopByHopOnly)
        w.appendFraming(chunked.framing)
        w.finish()
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "PUT /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(try parseRequest(w.bytes).get()?.framing, .chunked)

        let ws = try XCTUnwrap(parseRequest(crlf("GET /ws HTTP/1.1\nHost: h\nConnection: Upgrade\nUpgrade: websocket\nSec-WebSocket-Key: k\n\n")).get())
        XCTAssertTrue(ws.connection.upgrade)
        w.reset()
        try w.appendRequestLine(for: ws)
        w.appendFields(of: ws, forwarding: .hopByHopOnly, keepUpgrade: true)
        w.finish()
        let again = try XCTUnwrap(parseRequest(w.bytes).get())
        XCTAssertTrue(again.connection.upgrade)
        XCTAssertEqual(again.firstValueString("sec-websocket-key"), "k")
        w.reset()
        w.appendFields(of: ws, forwarding: .hopByHopOnly)
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "Host: h\r\nSec-WebSocket-Key: k\r\n")
    }

    func testAbsoluteAndAsteriskTargets() throws {
        var w = HeadWriter()
        try w.appendRequestLine(for: XCTUnwrap(parseRequest(crlf("GET http://h:1?x HTTP/1.1\nHost: h\n\n")).get()))
        try w.appendRequestLine(for: XCTUnwrap(parseRequest(crlf("OPTIONS * HTTP/1.0\n\n")).get()))
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "GET /?x HTTP/1.1\r\nOPTIONS * HTTP/1.1\r\n")
    }

    func testInvalidPathIsRefusedAndLeavesNothing() throws {
        let head = try XCTUnwrap(parseRequest(crlf("GET /a%zz HTTP/1.1\nHost: h\n\n")).get())
        var w = HeadWriter()
        w.append("X")
        XCTAssertThrowsError(try w.appendRequestLine(for: head)) { XCTAssertEqual($0 as? PathNormalizationError, .invalidEscape) }
        XCTAssertEqual(w.bytes, [0x58])
    }

    func testResponseHead() throws {
        let upstream = try XCTUnwrap(parseResponse(crlf("HTTP/1.0 404 Not Found\nContent-Length: 3\nConnection: close\nSet-Cookie: a=b\nX_Auth_Email: e\n\n")).get())
        var w = HeadWriter()
        w.appendStatusLine(of: upstream)
        w.appendFields(of: upstream, forwarding: identityForwarding)
        w.finish()
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nSet-Cookie: a=b\r\n\r\n")
        let again = try XCTUnwrap(parseResponse(w.bytes).get())
        XCTAssertEqual(again.framing, .contentLength(3))
        XCTAssertEqual(again.status, 404)

        w.reset()
        w.appendStatusLine(status: 431, reason: "Request Header Fields Too Large")
        w.appendContentLength(0)
        w.appendField("Connection", "close")
        w.finish()
        XCTAssertEqual(String(decoding: w.bytes, as: UTF8.self), "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    func testValueSafetyWordAtATimeAgreesWithTheByteRule() {
        // Every byte value at every position of values that span whole words and a tail.
        for length in [1, 7, 8, 9, 16, 19] {
            for position in 0..<length {
                for byte in UInt8.min...UInt8.max {
                    var value = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    value[position] = byte
                    let expected = value.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
                        && value.first != 0x20 && value.first != 0x09 && value.last != 0x20 && value.last != 0x09
                    XCTAssertEqual(value.withUnsafeBytes { HeaderValue.isSafe($0) }, expected, "\(length) \(position) \(byte)")
                }
            }
        }
    }

    func testValueSafety() {
        XCTAssertTrue(HeaderValue.isSafe("a b\tc"))
        XCTAssertTrue(HeaderValue.isSafe(""))
        XCTAssertTrue(HeaderValue.isSafe("Jos%C3%A9"))
        for bad in ["a\r\nX: y", "a\nb", "a\rb", "a\u{0}", "\u{7F}", "\u{1B}", " lead", "trail\t"] {
            XCTAssertFalse(HeaderValue.isSafe(bad), bad.debugDescription)
        }
        XCTAssertTrue(HeaderValue.isValidName("X-Request-Id"))
        XCTAssertFalse(HeaderValue.isValidName("X Request"))
        XCTAssertFalse(HeaderValue.isValidName(""))
        var w = HeadWriter()
        XCTAssertThrowsError(try w.appendField(name: "X-A", value: "v\r\nSet-Cookie: x")) {
            XCTAssertEqual($0 as? HeadWriteError, .unsafeFieldValue)
        }
        XCTAssertThrowsError(try w.appendField(name: "X:A", value: "v")) {
            XCTAssertEqual($0 as? HeadWriteError, .invalidFieldName)
        }
        XCTAssertEqual(w.bytes, [])
    }
}
