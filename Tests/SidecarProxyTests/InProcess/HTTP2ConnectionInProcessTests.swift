import Glibc
import XCTest

@testable import SidecarProxy

/// `HTTP2Connection` driven in process (`ConnectionHarness`): the test speaks HTTP/2 frames as
/// the client (the h2c preface on a plain connection) and HTTP/1.1 as the upstream.
final class HTTP2ConnectionInProcessTests: XCTestCase {
    typealias Inbox = ConnectionHarness.Inbox

    /// A connection past the preface: the HTTP/1.1 connection handed its socket over.
    private func start(_ harness: ConnectionHarness) -> (client: Int32, inbox: Inbox) {
        let (clientFD, _) = harness.connect()
        let inbox = Inbox(clientFD)
        ConnectionHarness.send(clientFD, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + H2Frames.frame(type: 0x4, flags: 0, stream: 0, []))
        harness.run { !harness.http2.isEmpty && H2Frames.parse(inbox.read().bytes).contains { $0.type == 0x4 } }
        return (clientFD, inbox)
    }

    func testTheh2cPrefaceHandsTheSocketToAnHTTP2Connection() throws {
        let harness = try ConnectionHarness()
        let (clientFD, inbox) = start(harness)
        defer { close(clientFD) }
        XCTAssertEqual(harness.http2.count, 1)
        XCTAssertEqual(harness.closed, 0, "handed over, not closed")
        let settings = H2Frames.parse(inbox.bytes).first
        XCTAssertEqual(settings?.type, 0x4, "the server's SETTINGS come first")
    }

    func testAStreamIsForwardedAsOneHTTP11RequestAndItsAnswerFramed() throws {
        let harness = try ConnectionHarness()
        let (clientFD, inbox) = start(harness)
        defer { close(clientFD) }
        inbox.clear()
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", "/h2/x?y=1"), (":authority", "app.example"),
                      ("x-auth-email", "forged@example.com"), ("accept", "text/plain")]
        ConnectionHarness.send(clientFD, H2Frames.frame(type: 0x1, flags: 0x5, stream: 1, H2Frames.literalBlock(fields)))
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        defer { close(upstreamFD!) }
        let upstream = Inbox(upstreamFD!)
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        XCTAssertTrue(upstream.text.hasPrefix("GET /h2/x?y=1 HTTP/1.1\r\n"), upstream.text)
        XCTAssertTrue(upstream.text.contains("Host: app.example\r\n"), ":authority becomes Host")
        XCTAssertTrue(upstream.text.lowercased().contains("accept: text/plain\r\n"))
        XCTAssertFalse(upstream.text.contains("forged@example.com"), "the same identity stripping as HTTP/1.1")

        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n")
        harness.run { H2Frames.parse(inbox.read().bytes).contains { $0.type == 0x0 && $0.flags & 0x1 != 0 } }
        let frames = H2Frames.parse(inbox.bytes).filter { $0.stream == 1 }
        let headers = try XCTUnwrap(frames.first { $0.type == 0x1 })
        XCTAssertEqual(headers.payload.first, 0x88, ":status 200, HPACK static index 8")
        let body = frames.filter { $0.type == 0x0 }.flatMap(\.payload)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "hi", "DATA carries the body without its chunked framing")
    }

    func testARequestHTTP2AllowsButHTTP11RefusesIsRefusedAlike() throws {
        let harness = try ConnectionHarness()
        let (clientFD, inbox) = start(harness)
        defer { close(clientFD) }
        inbox.clear()
        // A value byte HTTP/2's grammar lets through and the HTTP/1.1 parser refuses (DEL).
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "app.example"), ("x-odd", "a\u{7F}b")]
        ConnectionHarness.send(clientFD, H2Frames.frame(type: 0x1, flags: 0x5, stream: 1, H2Frames.literalBlock(fields)))
        harness.run { H2Frames.parse(inbox.read().bytes).contains { $0.stream == 1 && ($0.type == 0x1 || $0.type == 0x3) } }
        let answer = H2Frames.parse(inbox.bytes).first { $0.stream == 1 }
        if answer?.type == 0x1 {
            XCTAssertNotEqual(answer?.payload.first, 0x88, "not a 200")
        }
        XCTAssertNil(harness.acceptUpstream(), "never forwarded")
    }

    func testDrainSendsGOAWAYAndLetsTheStreamInProgressFinish() throws {
        let harness = try ConnectionHarness()
        let (clientFD, inbox) = start(harness)
        defer { close(clientFD) }
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", "/slow"), (":authority", "app.example")]
        ConnectionHarness.send(clientFD, H2Frames.frame(type: 0x1, flags: 0x5, stream: 1, H2Frames.literalBlock(fields)))
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        defer { close(upstreamFD!) }
        let upstream = Inbox(upstreamFD!)
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        inbox.clear()
        harness.http2[0].drain()
        harness.run { H2Frames.parse(inbox.read().bytes).contains { $0.type == 0x7 } }
        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
        harness.run { H2Frames.parse(inbox.read().bytes).contains { $0.type == 0x0 && $0.flags & 0x1 != 0 } }
        let body = H2Frames.parse(inbox.bytes).filter { $0.type == 0x0 && $0.stream == 1 }.flatMap(\.payload)
        XCTAssertEqual(String(decoding: body, as: UTF8.self), "done", "the stream begun before GOAWAY is answered in full")
    }
}

/// Just enough HTTP/2 framing for a test client: frames out, frames in, and header blocks of
/// literal fields (RFC 7541 §6.2.2, no indexing, no Huffman coding).
enum H2Frames {
    struct Frame {
        let type: UInt8, flags: UInt8, stream: UInt32
        let payload: [UInt8]
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags,
                UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    static func literalBlock(_ fields: [(String, String)]) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            precondition(name.utf8.count < 127 && value.utf8.count < 127)
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return block
    }

    /// The whole frames in `bytes` (a partial one at the end is left out).
    static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var i = 0
        while i + 9 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 9 + n <= bytes.count else { break }
            let stream = UInt32(bytes[i + 5] & 0x7F) << 24 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 8 | UInt32(bytes[i + 8])
            frames.append(Frame(type: bytes[i + 3], flags: bytes[i + 4], stream: stream, payload: Array(bytes[(i + 9)..<(i + 9 + n)])))
            i += 9 + n
        }
        return frames
    }
}
