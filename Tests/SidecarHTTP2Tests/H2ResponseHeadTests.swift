import XCTest

@testable import SidecarHTTP2

final class H2ResponseHeadTests: XCTestCase {
    private func translate(_ text: String, head: Bool = false) throws
        -> (length: Int, framing: H2ResponseHead.Framing, fields: [String])?
    {
        let fields = H2FieldList()
        let bytes = Array(text.utf8)
        let result = try bytes.withUnsafeBytes { raw in
            try H2ResponseHead.translate(raw, requestIsHead: head, into: fields)
        }
        guard let result else { return nil }
        let list = (0..<fields.count).map { i in
            let field = fields.field(i)
            return String(decoding: field.name, as: UTF8.self) + "=" + String(decoding: field.value, as: UTF8.self)
        }
        return (result.length, result.framing, list)
    }

    func testStatusFirstNamesLowercasedAndConnectionFieldsLeftOut() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n"
            + "Proxy-Connection: close\r\nUpgrade: h2c\r\nX-Request-Id:  abc \r\nContent-Length: 5\r\n\r\nhello"
        let result = try XCTUnwrap(try translate(text))
        XCTAssertEqual(result.fields, [":status=200", "content-type=text/plain", "x-request-id=abc", "content-length=5"])
        XCTAssertEqual(result.framing, .contentLength(5))
        XCTAssertEqual(result.length, text.utf8.count - 5)
    }

    func testFramingByTheFieldsThatSetIt() throws {
        XCTAssertEqual(try translate("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?.framing, .chunked)
        XCTAssertEqual(try translate("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")?.fields, [":status=200"])
        XCTAssertEqual(try translate("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")?.framing, H2ResponseHead.Framing.none)
        XCTAssertEqual(try translate("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n")?.framing, .untilClose)
        XCTAssertEqual(try translate("HTTP/1.1 204 No Content\r\n\r\n")?.framing, H2ResponseHead.Framing.none)
        XCTAssertEqual(try translate("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n")?.framing, H2ResponseHead.Framing.none)
        let head = try XCTUnwrap(try translate("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", head: true))
        XCTAssertEqual(head.framing, H2ResponseHead.Framing.none)
        XCTAssertEqual(head.fields, [":status=200", "content-length=9"])
    }

    func testInterimHeadsAreReportedToBeSkipped() throws {
        let result = try XCTUnwrap(try translate("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"))
        XCTAssertEqual(result.framing, .interim)
        XCTAssertEqual(result.length, 25)
    }

    func testAnIncompleteHeadWaits() throws {
        XCTAssertNil(try translate("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"))
        XCTAssertNil(try translate("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r"))
    }

    func testWhatTheWriterNeverProducesIsRefused() {
        for text in [
            "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 099 Odd\r\n\r\n", "HTTX/1.1 200 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        ] {
            XCTAssertThrowsError(try translate(text), text)
        }
        XCTAssertThrowsError(try translate("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: H2ResponseHead.maxBytes)))
    }

    func testTheListGrowsPastItsFirstBuffers() {
        let fields = H2FieldList()
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 700)
        fields.appendStatus(404)
        for i in 0..<40 {
            Array("X-Field-\(i)".utf8).withUnsafeBytes { name in value.withUnsafeBytes { fields.append(lowercasing: name, value: $0) } }
        }
        XCTAssertEqual(fields.count, 41)
        XCTAssertEqual(String(decoding: fields.field(0).value, as: UTF8.self), "404")
        XCTAssertEqual(String(decoding: fields.field(40).name, as: UTF8.self), "x-field-39")
        XCTAssertEqual(fields.field(40).value, value)
        fields.removeAll()
        XCTAssertEqual(fields.count, 0)
    }
}
