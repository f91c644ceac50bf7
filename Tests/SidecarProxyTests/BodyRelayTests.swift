import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

final class BodyRelayTests: XCTestCase {
    private var source: ByteQueue!
    private var sink: ByteQueue!

    override func setUp() {
        source = ByteQueue.allocate()
        sink = ByteQueue.allocate()
    }

    override func tearDown() {
        source.deallocate()
        sink.deallocate()
    }

    private func feed(_ text: String) {
        source.append(Array(text.utf8))
    }

    private func drained(_ queue: ByteQueue) -> String {
        String(decoding: queue.removeAll(), as: UTF8.self)
    }

    func testContentLengthStopsAtTheLengthAndLeavesTheNextMessage() {
        var relay = BodyRelay(framing: .contentLength(5), chunkOutput: false)
        feed("hel")
        XCTAssertEqual(relay.relay(from: source, to: sink), .needMore)
        feed("loGET / HTTP/1.1\r\n")
        XCTAssertEqual(relay.relay(from: source, to: sink), .done)
        XCTAssertEqual(drained(sink), "hello")
        XCTAssertEqual(drained(source), "GET / HTTP/1.1\r\n")
        XCTAssertEqual(relay.transferred, 5)
    }

    func testChunkedIsRechunkedAndTrailersDropped() {
        var relay = BodyRelay(framing: .chunked, chunkOutput: true)
        feed("5;ext=1\r\nhel")
        XCTAssertEqual(relay.relay(from: source, to: sink), .needMore)
        feed("lo\r\na\r\n world, hi\r\n0\r\nX-Trailer: smuggled\r\n\r\nNEXT")
        XCTAssertEqual(relay.relay(from: source, to: sink), .done)
        XCTAssertEqual(drained(sink), "3\r\nhel\r\n2\r\nlo\r\na\r\n world, hi\r\n0\r\n\r\n")
        XCTAssertEqual(drained(source), "NEXT")
        XCTAssertEqual(relay.transferred, 15)
    }

    func testChunkedDecodedRawForHTTP10Readers() {
        var relay = BodyRelay(framing: .chunked, chunkOutput: false)
        feed("3\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(relay.relay(from: source, to: sink), .done)
        XCTAssertEqual(drained(sink), "abc")
    }

    func testMalformedChunkIsInvalid() {
        var relay = BodyRelay(framing: .chunked, chunkOutput: true)
        feed("zz\r\nabc\r\n")
        XCTAssertEqual(relay.relay(from: source, to: sink), .invalid)
    }

    func testChunkedLimitIsEnforced() {
        var relay = BodyRelay(framing: .chunked, chunkOutput: true, limit: 4)
        feed("5\r\nhello\r\n0\r\n\r\n")
        XCTAssertEqual(relay.relay(from: source, to: sink), .tooLarge)
    }

    func testUntilCloseIsChunkedAndEndsAtEndOfStream() {
        var relay = BodyRelay(framing: .untilClose, chunkOutput: true)
        feed("streamed")
        XCTAssertEqual(relay.relay(from: source, to: sink), .needMore)
        XCTAssertTrue(relay.finishAtEndOfStream(to: sink))
        XCTAssertEqual(drained(sink), "8\r\nstreamed\r\n0\r\n\r\n")
    }

    func testEndOfStreamTruncatesALengthDelimitedBody() {
        var relay = BodyRelay(framing: .contentLength(10), chunkOutput: false)
        feed("short")
        XCTAssertEqual(relay.relay(from: source, to: sink), .needMore)
        XCTAssertFalse(relay.finishAtEndOfStream(to: sink))
    }
}

final class RequestIDTests: XCTestCase {
    func testGeneratedIdsAreUniqueAndAcceptable() {
        var generator = RequestIDGenerator()
        let a = generator.next(), b = generator.next()
        XCTAssertNotEqual(a, b)
        XCTAssertTrue(RequestIDGenerator.isAcceptable(a[...]))
    }

    func testIdsWrittenOverAReusedArrayCountInHex() {
        var generator = RequestIDGenerator()
        var id = Array("a stale value longer than any id, with spaces".utf8)
        var seen = Set<[UInt8]>()
        for n in 1...17 {
            generator.next(into: &id)
            XCTAssertTrue(RequestIDGenerator.isAcceptable(id), String(decoding: id, as: UTF8.self))
            XCTAssertEqual(id.count, 17 + (n < 16 ? 1 : 2))  // 16 hex digits of prefix, '-', the counter
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 17)
        XCTAssertEqual(Array(id.suffix(3)), Array("-11".utf8))
    }

    func testClientIdsAreValidated() {
        XCTAssertTrue(RequestIDGenerator.isAcceptable(Array("abc-123_X.y".utf8)[...]))
        XCTAssertFalse(RequestIDGenerator.isAcceptable(Array("a b".utf8)[...]))
        XCTAssertFalse(RequestIDGenerator.isAcceptable([][...]))
        XCTAssertFalse(RequestIDGenerator.isAcceptable([UInt8](repeating: 0x61, count: 129)[...]))
    }
}
