import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// A local endpoint's call on its own: its body buffered within its cap, and a late answer
/// (one asked for during an exchange that has ended since) told from a current one.
final class LocalEndpointCallTests: XCTestCase {
    private func input(_ text: String) throws -> ByteQueue {
        let queue = try XCTUnwrap(ByteQueue.allocate())
        XCTAssertTrue(queue.append(Array(text.utf8)))
        return queue
    }

    func testABodyArrivingInPiecesIsHandedOverWholeAndTheRestLeftUnread() throws {
        var call = LocalEndpointCall()
        XCTAssertTrue(call.startBuffering(.logout, framing: .contentLength(7), limit: 100))
        XCTAssertTrue(call.isBuffering)
        let first = try input("a=1")
        XCTAssertEqual(call.buffer(from: first), .needMore)
        let second = try input("&b=2GET / HTTP/1.1")
        XCTAssertEqual(call.buffer(from: second), .complete(.logout, body: Array("a=1&b=2".utf8)))
        XCTAssertFalse(call.isBuffering, "the buffer is freed with the body handed over")
        XCTAssertEqual(second.count, "GET / HTTP/1.1".utf8.count, "the next request stays in the input")
        first.deallocate()
        second.deallocate()
    }

    func testABodyOverTheCapIsRefused413AndOneBreakingItsFraming400() throws {
        var call = LocalEndpointCall()
        XCTAssertTrue(call.startBuffering(.logout, framing: .chunked, limit: 4))
        let large = try input("a\r\n0123456789\r\n0\r\n\r\n")
        XCTAssertEqual(call.buffer(from: large), .refused(status: 413))
        XCTAssertFalse(call.isBuffering)

        XCTAssertTrue(call.startBuffering(.logout, framing: .chunked, limit: 100))
        let broken = try input("zz\r\n")
        XCTAssertEqual(call.buffer(from: broken), .refused(status: 400))
        XCTAssertFalse(call.isBuffering)
        large.deallocate()
        broken.deallocate()
    }

    func testAnAnswerIsCurrentUntilItsExchangeEnds() {
        var call = LocalEndpointCall()
        let first = call.ticket
        XCTAssertTrue(call.isCurrent(first))
        call.exchangeEnded()  // a 504 for the slow answer, or the client gone
        XCTAssertFalse(call.isCurrent(first), "the first exchange's late answer is dropped")
        let second = call.ticket
        XCTAssertTrue(call.isCurrent(second))
        call.exchangeEnded()
        call.exchangeEnded()
        XCTAssertFalse(call.isCurrent(second))
    }

    func testAnExchangeEndingMidBodyDropsTheBuffer() {
        var call = LocalEndpointCall()
        XCTAssertTrue(call.startBuffering(.logout, framing: .contentLength(10), limit: 100))
        call.exchangeEnded()
        XCTAssertFalse(call.isBuffering)
    }
}
