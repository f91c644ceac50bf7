import SidecarHTTP
import XCTest

final class ProxyProtocolHeaderTests: XCTestCase {
    private func parse(_ bytes: [UInt8]) -> ProxyProtocolHeader.ParseResult {
        bytes.withUnsafeBytes { ProxyProtocolHeader.parse($0) }
    }

    private func parse(_ text: String) -> ProxyProtocolHeader.ParseResult { parse(Array(text.utf8)) }

    private let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]

    /// A v2 header: `command` (0 LOCAL, 1 PROXY), `family`, then `block` (addresses and TLVs).
    private func binary(command: UInt8 = 1, family: UInt8, block: [UInt8], version: UInt8 = 2) -> [UInt8] {
        signature + [version << 4 | command, family, UInt8(block.count >> 8), UInt8(block.count & 0xFF)] + block
    }

    private let tcp4Block: [UInt8] = [192, 0, 2, 7, 198, 51, 100, 1, 0xD4, 0x31, 0x01, 0xBB]  // port 54321 → 443

    // MARK: version 1

    func testTextHeadersGiveTheClientAndTheirLength() {
        let request = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        let cases: [(String, [UInt8], UInt16, String)] = [
            ("PROXY TCP4 192.0.2.7 198.51.100.1 54321 443\r\n", [192, 0, 2, 7], 54321, "192.0.2.7"),
            ("PROXY TCP6 2001:db8::7 2001:db8::1 0 65535\r\n",
             [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [7], 0, "2001:db8::7"),
        ]
        for (line, address, port, text) in cases {
            guard case .header(let header) = parse(line + request) else { return XCTFail(line) }
            XCTAssertEqual(header.source, .client(address: address, port: port), line)
            XCTAssertEqual(header.length, line.utf8.count, line)
            XCTAssertEqual(header.clientText, text, line)
        }
        guard case .header(let unknown) = parse("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n" + request) else { return XCTFail() }
        XCTAssertEqual(unknown.source, .peer)
        XCTAssertNil(unknown.clientText)
    }

    func testPartialTextHeadersWaitForMore() {
        for partial in ["P", "PROXY", "PROXY ", "PROXY TCP4 192.0.2.7 198.51.100.1 54321 44", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"] {
            XCTAssertEqual(parse(partial), .needMore, partial)
        }
    }

    func testMalformedTextHeadersAreRefused() {
        let refused = [
            "GET / HTTP/1.1\r\n\r\n",  // no header at all
            "proxy TCP4 192.0.2.7 198.51.100.1 1 2\r\n",  // case matters
            "PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n",  // LF alone
            "PROXY TCP4  192.0.2.7 198.51.100.1 1 2\r\n",  // two spaces
            "PROXY TCP4 192.0.2.7 198.51.100.1 1\r\n",  // a field missing
            "PROXY TCP4 192.0.2.7 198.51.100.1 1 2 3\r\n",  // one too many
            "PROXY TCP4 256.0.2.7 198.51.100.1 1 2\r\n",  // not an IPv4 address
            "PROXY TCP4 2001:db8::7 198.51.100.1 1 2\r\n",  // IPv6 under TCP4
            "PROXY TCP6 192.0.2.7 2001:db8::1 1 2\r\n",  // IPv4 under TCP6
            "PROXY TCP4 192.0.2.7 198.51.100.1 65536 2\r\n",  // port out of range
            "PROXY TCP4 192.0.2.7 198.51.100.1 080 2\r\n",  // leading zero
            "PROXY TCP4 192.0.2.7 198.51.100.1 -1 2\r\n",  // sign
            "PROXY TCP4 192.0.2.7 198.51.100.1 1 \r\n",  // empty port
            "PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",  // not a stream protocol
            "PROXY " + String(repeating: "A", count: 120),  // longer than 107 bytes, no line end
        ]
        for text in refused {
            guard case .invalid = parse(text) else { return XCTFail("accepted: \(text.debugDescription)") }
        }
    }

    // MARK: version 2

    func testBinaryHeadersGiveTheClientAndTheirLength() {
        let tcp4 = binary(family: 0x11, block: tcp4Block)
        guard case .header(let header) = parse(tcp4 + Array("GET /".utf8)) else { return XCTFail() }
        XCTAssertEqual(header.source, .client(address: [192, 0, 2, 7], port: 54321))
        XCTAssertEqual(header.length, 28)
        XCTAssertEqual(header.clientText, "192.0.2.7")

        let source6: [UInt8] = [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [9]
        let tcp6 = binary(family: 0x21, block: source6 + [UInt8](repeating: 1, count: 16) + [0, 80, 1, 187])
        guard case .header(let header6) = parse(tcp6) else { return XCTFail() }
        XCTAssertEqual(header6.source, .client(address: source6, port: 80))
        XCTAssertEqual(header6.clientText, "2001:db8::9")
    }

    func testTLVsAreWalkedAndIgnored() {
        // An AWS NLB's VPC endpoint id (type 0xEA) and an ALPN (0x01).
        let tlvs: [UInt8] = [0xEA, 0, 5] + Array("vpce1".utf8) + [0x01, 0, 2] + Array("h2".utf8)
        guard case .header(let header) = parse(binary(family: 0x11, block: tcp4Block + tlvs)) else { return XCTFail() }
        XCTAssertEqual(header.length, 16 + 12 + tlvs.count)
        XCTAssertEqual(header.clientText, "192.0.2.7")
        for bad: [UInt8] in [[0xEA, 0], [0xEA, 0, 9] + Array("short".utf8)] {
            guard case .invalid = parse(binary(family: 0x11, block: tcp4Block + bad)) else { return XCTFail("\(bad)") }
        }
    }

    func testLocalAndUnspecifiedMeanThePeer() {
        let cases = [
            binary(command: 0, family: 0x11, block: tcp4Block),  // LOCAL: health checks
            binary(command: 0, family: 0x00, block: []),
            binary(command: 1, family: 0x00, block: [1, 2, 3]),  // unspecified: the block is ignored
            binary(command: 1, family: 0x31, block: [UInt8](repeating: 0, count: 216)),  // unix
        ]
        for bytes in cases {
            guard case .header(let header) = parse(bytes) else { return XCTFail("\(bytes[12...15])") }
            XCTAssertEqual(header.source, .peer)
            XCTAssertEqual(header.length, bytes.count)
        }
    }

    func testPartialBinaryHeadersWaitForMore() {
        let whole = binary(family: 0x11, block: tcp4Block)
        for count in [1, 5, 12, 15, 16, 27] {
            XCTAssertEqual(parse(Array(whole.prefix(count))), .needMore, "\(count) bytes")
        }
    }

    func testMalformedBinaryHeadersAreRefused() {
        let refused: [(String, [UInt8])] = [
            ("signature", Array(signature.prefix(11)) + [0x0B] + [0x21, 0x11, 0, 12] + tcp4Block),
            ("version 1", binary(family: 0x11, block: tcp4Block, version: 1)),
            ("command 2", binary(command: 2, family: 0x11, block: tcp4Block)),
            ("UDP", binary(family: 0x12, block: tcp4Block)),
            ("family 0x41", binary(family: 0x41, block: tcp4Block)),
            ("short IPv4 block", binary(family: 0x11, block: Array(tcp4Block.prefix(10)))),
            ("short IPv6 block", binary(family: 0x21, block: tcp4Block)),
            ("short unix block", binary(family: 0x31, block: [UInt8](repeating: 0, count: 100))),
            ("oversized", signature + [0x21, 0x11, 0xFF, 0xFF]),
        ]
        for (name, bytes) in refused {
            guard case .invalid = parse(bytes) else { return XCTFail("accepted: \(name)") }
        }
    }
}
