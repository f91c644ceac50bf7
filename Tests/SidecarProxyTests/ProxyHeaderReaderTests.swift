import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// The PROXY header reader on its own, fed by a socket the test plays: bytes arrive one at a
/// time, the reader must take exactly the header's bytes (what follows is the client's) and
/// say when it is whole, broken or cut short.
final class ProxyHeaderReaderTests: XCTestCase {
    /// A socket whose bytes arrive when the test says: peeked without being taken, then taken
    /// exactly as many as the reader asks for.
    final class Socket: PreambleSource {
        let bytes: [UInt8]
        var arrived = 0
        var taken = 0
        var closed = false

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        func peekPreamble(into buffer: UnsafeMutableRawBufferPointer) -> PreambleRead {
            let count = min(buffer.count, arrived - taken)
            guard count > 0 else { return closed ? .ended(error: 0) : .nothing }
            bytes[taken..<(taken + count)].withUnsafeBytes { buffer.copyMemory(from: $0) }
            return .bytes(count)
        }

        func consumePreamble(_ count: Int) -> Bool {
            guard taken + count <= arrived else { return false }
            taken += count
            return true
        }
    }

    private let request = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)

    /// Feeds `header` and a request behind it byte by byte; returns what the reader said at
    /// each byte and what it left in the socket.
    private func feedByteByByte(_ header: [UInt8]) -> (outcomes: [ProxyHeaderReader.Outcome], socket: Socket) {
        let socket = Socket(header + request)
        var reader = ProxyHeaderReader()
        var outcomes: [ProxyHeaderReader.Outcome] = []
        while socket.arrived < socket.bytes.count {
            socket.arrived += 1
            let outcome = reader.read(from: socket)
            outcomes.append(outcome)
            if outcome != .waiting { break }
        }
        return (outcomes, socket)
    }

    func testATextHeaderByteByByteIsWholeAtItsLastByteAndLeavesTheRequest() {
        let header = Array("PROXY TCP4 192.0.2.7 198.51.100.1 54321 443\r\n".utf8)
        let (outcomes, socket) = feedByteByByte(header)
        XCTAssertEqual(outcomes.count, header.count, "whole exactly at its last byte")
        XCTAssertEqual(outcomes.dropLast(), Array(repeating: .waiting, count: header.count - 1))
        guard case .header(let parsed) = outcomes.last else { return XCTFail("\(outcomes.last.map(String.init(describing:)) ?? "nothing")") }
        XCTAssertEqual(parsed.source, .client(address: [192, 0, 2, 7], port: 54321))
        XCTAssertEqual(socket.taken, header.count, "the request behind it stays in the socket")
    }

    func testABinaryHeaderByteByByteTakesExactlyItsLength() {
        var header: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x21, 0x11, 0x00, 12]
        header += [203, 0, 113, 9, 127, 0, 0, 1, 0x9C, 0x40, 0x01, 0xBB]
        let (outcomes, socket) = feedByteByByte(header)
        guard case .header(let parsed) = outcomes.last else { return XCTFail("\(outcomes)") }
        XCTAssertEqual(outcomes.count, header.count)
        XCTAssertEqual(parsed.source, .client(address: [203, 0, 113, 9], port: 40000))
        XCTAssertEqual(socket.taken, header.count)
    }

    func testAHeaderArrivingWithTheRequestInOneReadTakesOnlyTheHeader() {
        let header = Array("PROXY TCP4 192.0.2.7 198.51.100.1 1 2\r\n".utf8)
        let socket = Socket(header + request)
        socket.arrived = socket.bytes.count
        var reader = ProxyHeaderReader()
        guard case .header = reader.read(from: socket) else { return XCTFail() }
        XCTAssertEqual(socket.taken, header.count)
    }

    func testAPeerThatClosesMidHeaderEndsIt() {
        let socket = Socket(Array("PROXY TCP4 192.0.2.7".utf8))
        var reader = ProxyHeaderReader()
        socket.arrived = socket.bytes.count
        XCTAssertEqual(reader.read(from: socket), .waiting)
        socket.closed = true
        XCTAssertEqual(reader.read(from: socket), .ended)
    }

    func testAMalformedTextHeaderIsInvalidOnceItsLineIsWhole() {
        let header = Array("PROXY TCP4  192.0.2.7 198.51.100.1 1 2\r\n".utf8)
        let (outcomes, socket) = feedByteByByte(header)
        guard case .invalid = outcomes.last else { return XCTFail("\(outcomes)") }
        XCTAssertEqual(outcomes.count, header.count)
        XCTAssertEqual(socket.taken, header.count - 1, "its last byte is not taken: the connection closes")
    }

    func testAWrongFirstByteIsInvalidAtOnce() {
        let (outcomes, socket) = feedByteByByte(Array("GET / HTTP/1.1\r\n".utf8))
        guard case .invalid = outcomes.last else { return XCTFail("\(outcomes)") }
        XCTAssertEqual(outcomes.count, 1)
        XCTAssertEqual(socket.taken, 0, "a request sent without the header is not eaten")
    }

    func testATextHeaderThatNeverEndsIsRefusedAsTooLong() {
        let socket = Socket(Array("PROXY TCP4 ".utf8) + Array(repeating: UInt8(ascii: "1"), count: 4_000))
        var reader = ProxyHeaderReader()
        var outcome = ProxyHeaderReader.Outcome.waiting
        while outcome == .waiting, socket.arrived < socket.bytes.count {
            socket.arrived = min(socket.bytes.count, socket.arrived + 50)
            outcome = reader.read(from: socket)
        }
        guard case .invalid = outcome else { return XCTFail("\(outcome)") }
    }

    // MARK: the peer it yields

    func testTheHeadersClientReplacesTheBalancerTrustedOnlyIfListed() {
        var peer = ClientPeer(text: Array("127.0.0.1".utf8), trusted: true)
        peer.adopt(.client(address: [192, 0, 2, 7], port: 1)) { _ in false }
        XCTAssertEqual(String(decoding: peer.text, as: UTF8.self), "192.0.2.7")
        XCTAssertFalse(peer.trusted)

        var listed = ClientPeer(text: Array("127.0.0.1".utf8), trusted: true)
        listed.adopt(.client(address: [10, 0, 0, 2], port: 1)) { $0 == [10, 0, 0, 2] }
        XCTAssertTrue(listed.trusted)
    }

    func testAnIPv4MappedClientIsWrittenAndCheckedAsIPv4() {
        var peer = ClientPeer(text: Array("::1".utf8), trusted: true)
        var asked: [UInt8] = []
        peer.adopt(.client(address: Array(repeating: 0, count: 10) + [0xff, 0xff, 198, 51, 100, 9], port: 1)) {
            asked = $0
            return true
        }
        XCTAssertEqual(String(decoding: peer.text, as: UTF8.self), "198.51.100.9")
        XCTAssertEqual(asked, [198, 51, 100, 9])
    }

    func testAHeaderNamingNoClientKeepsTheBalancersAddressWithoutItsTrust() {
        var peer = ClientPeer(text: Array("127.0.0.1".utf8), trusted: true)
        peer.adopt(.peer) { _ in true }
        XCTAssertEqual(String(decoding: peer.text, as: UTF8.self), "127.0.0.1")
        XCTAssertFalse(peer.trusted)
    }
}
