import XCTest
import SidecarHTTP

/// Every byte value against the RFC 9110 classes the field parser enforces, through the
/// public parser, in every position of the word-at-a-time value scan.
final class ByteClassTests: XCTestCase {
    private let tchar = Set(Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8))

    private func head(_ field: [UInt8]) -> [UInt8] {
        Array("GET / HTTP/1.1\r\nHost: h\r\n".utf8) + field + Array("\r\n\r\n".utf8)
    }

    /// In every position of a 40-character name: the scan takes sixteen bytes a step.
    func testFieldNameBytesAreExactlyTokenCharacters() throws {
        for position in 0..<40 {
            for b in 0...255 {
                let byte = UInt8(b)
                if byte == UInt8(ascii: ":") || byte == 0x0D || byte == 0x0A { continue }  // ends the name or the line
                var name = [UInt8](repeating: UInt8(ascii: "n"), count: 40)
                name[position] = byte
                let result = parseRequest(head(name + Array(": v".utf8)))
                if tchar.contains(byte) {
                    let parsed = try XCTUnwrap(result.get(), "byte \(b) at \(position)")
                    XCTAssertEqual(parsed.fields.count, 2)
                    XCTAssertEqual(parsed.fields.last.map { Array(parsed.bytes($0.name)) }, name)
                } else {
                    XCTAssertThrowsError(try result.get(), "byte \(b) at \(position) accepted in a field name")
                }
            }
        }
    }

    func testFieldValueBytesInEveryPositionOfTheWordScan() throws {
        for position in 0..<40 {
            for b in 0...255 {
                let byte = UInt8(b)
                if byte == 0x0D || byte == 0x0A { continue }
                var value = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
                value[position] = byte
                let result = parseRequest(head(Array("X-V: ".utf8) + value))
                let allowed = byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
                if allowed {
                    let parsed = try XCTUnwrap(result.get(), "byte \(b) at \(position)")
                    let field = try XCTUnwrap(parsed.fields.last)
                    // OWS at the edges is not part of the value.
                    var expected = value[...]
                    while let f = expected.first, f == 0x20 || f == 0x09 { expected = expected.dropFirst() }
                    while let l = expected.last, l == 0x20 || l == 0x09 { expected = expected.dropLast() }
                    XCTAssertEqual(Array(parsed.bytes(field.value)), Array(expected), "byte \(b) at \(position)")
                } else {
                    XCTAssertThrowsError(try result.get(), "byte \(b) at \(position) accepted in a value")
                }
            }
        }
    }
}

/// The names that decide framing and connection handling match in any letter case.
final class FieldNameCaseTests: XCTestCase {
    func testFramingAndConnectionNamesInAnyCase() throws {
        let length = try XCTUnwrap(parseRequest(crlf("POST / HTTP/1.1\nHOST: h\nCONTENT-LENGTH: 5\n\n")).get())
        XCTAssertEqual(length.framing, .contentLength(5))
        XCTAssertEqual(length.host.map { Array(length.bytes($0)) }, Array("h".utf8))
        let chunked = try XCTUnwrap(parseRequest(crlf("POST / HTTP/1.1\nhOsT: h\ntRaNsFeR-eNcOdInG: chunked\n\n")).get())
        XCTAssertEqual(chunked.framing, .chunked)
        let close = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.1\nHost: h\nCONNECTION: close\n\n")).get())
        XCTAssertFalse(close.connection.keepAlive)
        let upgrade = try XCTUnwrap(parseRequest(crlf("GET / HTTP/1.1\nHost: h\nConnection: Upgrade\nUPGRADE: websocket\nEXPECT: 100-continue\n\n")).get())
        XCTAssertTrue(upgrade.connection.upgrade)
        XCTAssertTrue(upgrade.connection.expectContinue)
        XCTAssertThrowsError(try parseRequest(crlf("GET / HTTP/1.1\nHOST: a\nhost: b\n\n")).get())
        XCTAssertThrowsError(try parseRequest(crlf("POST / HTTP/1.1\nHost: a\nContent-Length: 1\nTRANSFER-ENCODING: chunked\n\n")).get())
    }
}
