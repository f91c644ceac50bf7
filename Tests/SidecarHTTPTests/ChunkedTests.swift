import XCTest
import SidecarHTTP

/// Feeds `pieces` in order through one decoder; returns the body, the bytes left after the
/// end (nil if the end was not reached) or the error.
func decodeChunked(_ pieces: [[UInt8]], limits: ChunkedDecoder.Limits = .init())
    -> Result<(body: [UInt8], rest: [UInt8]?), ChunkedDecodingError>
{
    var decoder = ChunkedDecoder(limits: limits)
    var body: [UInt8] = []
    for (n, piece) in pieces.enumerated() {
        let step: Result<[UInt8]?, ChunkedDecodingError> = piece.withUnsafeBytes { buf in
            var index = 0
            while true {
                do throws(ChunkedDecodingError) {
                    switch try decoder.next(buf, index: &index) {
                    case .data(let r): body.append(contentsOf: buf[r])
                    case .trailer: XCTFail("trailers reported unasked")
                    case .needMoreData: return .success(nil)
                    case .end:
                        var rest = Array(buf[index...])
                        for later in pieces[(n + 1)...] { rest += later }
                        return .success(rest)
                    }
                } catch { return .failure(error) }
            }
        }
        switch step {
        case .failure(let e): return .failure(e)
        case .success(let rest?): return .success((body, rest))
        case .success(nil): continue
        }
    }
    return .success((body, nil))
}

final class ChunkedTests: XCTestCase {
    let wire = Array("5\r\nhello\r\n1;name=value;x\r\n \r\n0000A\r\n0123456789\r\n0\r\nX-Sum: 1\r\nX-T: a b\r\n\r\nNEXT".utf8)
    let body = Array("hello 0123456789".utf8)

    func testDecodesWholeInput() throws {
        let (decoded, rest) = try decodeChunked([wire]).get()
        XCTAssertEqual(decoded, body)
        XCTAssertEqual(rest, Array("NEXT".utf8))
    }

    func testEveryTwoWaySplit() throws {
        for cut in 0...wire.count {
            let (decoded, rest) = try decodeChunked([Array(wire[..<cut]), Array(wire[cut...])]).get()
            XCTAssertEqual(decoded, body, "cut \(cut)")
            XCTAssertEqual(rest, Array("NEXT".utf8), "cut \(cut)")
        }
    }

    func testByteByByte() throws {
        let (decoded, rest) = try decodeChunked(wire.map { [$0] }).get()
        XCTAssertEqual(decoded, body)
        XCTAssertEqual(rest, Array("NEXT".utf8))
    }

    func testIncompleteWaits() throws {
        let (decoded, rest) = try decodeChunked([Array("5\r\nhel".utf8)]).get()
        XCTAssertEqual(decoded, Array("hel".utf8))
        XCTAssertNil(rest)
        XCTAssertNil(try decodeChunked([Array("0\r\n\r".utf8)]).get().rest)
    }

    func testMaxSizeAccepted() throws {
        var decoder = ChunkedDecoder()
        let head = Array("FFFFFFFFFFFFFFFF\r\nabc".utf8)
        let event = try head.withUnsafeBytes { buf in
            var i = 0
            return try decoder.next(buf, index: &i)
        }
        XCTAssertEqual(event, .data(18..<21))
    }

    func testRejections() {
        let cases: [(String, ChunkedDecodingError)] = [
            ("+5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            ("-5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            (" 5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            ("0x5\r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            ("5 \r\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            ("5\nhello\r\n0\r\n\r\n", .invalidChunkSize),
            ("5\r\rhello\r\n0\r\n\r\n", .missingCRLF),
            ("\r\n", .invalidChunkSize),
            ("g\r\n", .invalidChunkSize),
            ("10000000000000000\r\n", .chunkSizeTooLong),
            ("00000000000000005\r\n", .chunkSizeTooLong),
            ("5;a\u{0}b\r\nhello\r\n0\r\n\r\n", .invalidExtension),
            ("5;a\nb\r\nhello\r\n0\r\n\r\n", .invalidExtension),
            ("5\r\nhello\n0\r\n\r\n", .missingCRLF),
            ("5\r\nhelloX\r\n0\r\n\r\n", .missingCRLF),
            ("5\r\nhello\r\r0\r\n\r\n", .missingCRLF),
            ("5\r\nhello\r\n0\r\n\n", .missingCRLF),
            ("0\r\nX: y\n\r\n", .missingCRLF),
            ("0\r\n: y\r\n\r\n", .invalidTrailer),
            ("0\r\nX y: z\r\n\r\n", .invalidTrailer),
            ("0\r\n y\r\n\r\n", .invalidTrailer),
            ("0\r\nX: a\u{1}\r\n\r\n", .invalidTrailer),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(decodeChunked([Array(text.utf8)]).error, expected, text.debugDescription)
        }
    }

    func testLimits() {
        let limits = ChunkedDecoder.Limits(maxExtensionBytes: 8, maxTrailerBytes: 10)
        XCTAssertEqual(try decodeChunked([Array("1;abcdefg\r\nx\r\n0\r\n\r\n".utf8)], limits: limits).get().body, [0x78])
        XCTAssertEqual(decodeChunked([Array("1;abcdefgh\r\nx\r\n".utf8)], limits: limits).error, .lineTooLong)
        XCTAssertEqual(decodeChunked([Array("1 ;abcdefgh\r\nx\r\n".utf8)], limits: limits).error, .lineTooLong)
        XCTAssertEqual(try decodeChunked([Array("0\r\nA: 12345\r\n\r\n".utf8)], limits: limits).get().rest, [])
        XCTAssertEqual(decodeChunked([Array("0\r\nA: 1234567\r\n\r\n".utf8)], limits: limits).error, .trailersTooLarge)
        XCTAssertEqual(decodeChunked([Array("0\r\nA: 1\r\nB: 234\r\n\r\n".utf8)], limits: limits).error, .trailersTooLarge)
    }

    func testEncoderRoundTrip() throws {
        var out: [UInt8] = []
        let blocks: [[UInt8]] = [Array("a".utf8), Array(repeating: 0x41, count: 300), [], Array("end".utf8)]
        for b in blocks { b.withUnsafeBytes { ChunkedEncoder.appendChunk($0, to: &out) } }
        out += ChunkedEncoder.lastChunk
        XCTAssertTrue(out.starts(with: Array("1\r\na\r\n12C\r\n".utf8)))
        let (decoded, rest) = try decodeChunked([out]).get()
        XCTAssertEqual(decoded, blocks.flatMap { $0 })
        XCTAssertEqual(rest, [])
        var header: [UInt8] = []
        ChunkedEncoder.appendChunkHeader(size: Int(Int64.max), to: &header)
        XCTAssertEqual(String(decoding: header, as: UTF8.self), "7FFFFFFFFFFFFFFF\r\n")
    }

    /// With `reportingTrailers`, the trailer section comes out whole — its lines, without the
    /// final CRLF — however the input is cut, and the body is unchanged.
    func testReportsTheTrailerSectionAcrossAnyCut() throws {
        let expected = Array("X-Sum: 1\r\nX-T: a b\r\n".utf8)
        for cut in 1..<wire.count {
            var decoder = ChunkedDecoder(reportingTrailers: true)
            var body: [UInt8] = [], trailers: [UInt8] = []
            var ended = false
            for piece in [Array(wire[..<cut]), Array(wire[cut...])] where !ended {
                piece.withUnsafeBytes { buf in
                    var index = 0
                    decoding: while true {
                        switch try! decoder.next(buf, index: &index) {
                        case .data(let r): body += buf[r]
                        case .trailer(let r): trailers += buf[r]
                        case .needMoreData: break decoding
                        case .end:
                            ended = true
                            break decoding
                        }
                    }
                }
            }
            XCTAssertTrue(ended, "cut \(cut)")
            XCTAssertEqual(body, self.body, "cut \(cut)")
            XCTAssertEqual(trailers, expected, "cut \(cut)")
        }
    }

    func testTrailerFieldsThatMayNotBePassedOnAreDropped() {
        let section = Array(("X-Ok: 1\r\nContent-Length: 5\r\nX-Auth-User-Id: admin\r\nSet-Cookie: a=1\r\n"
            + "Transfer-Encoding: chunked\r\nx_auth_email: e\r\nGrpc-Status:  0 \r\n").utf8)
        var passed: [String] = []
        section.withUnsafeBytes { raw in
            TrailerFields.forEach(raw, forwarding: FieldForwarding(dropping: ["x-auth-*"])) { name, value in
                passed.append(String(decoding: name, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            }
        }
        XCTAssertEqual(passed, ["X-Ok=1", "Grpc-Status=0"])
    }
}
