import SidecarEvent
import XCTest

final class ByteQueueTests: XCTestCase {
    private var queue: ByteQueue!
    private var other: ByteQueue!

    override func setUp() {
        queue = ByteQueue.allocate()
        other = ByteQueue.allocate()
    }

    override func tearDown() {
        queue.deallocate()
        other.deallocate()
    }

    private func text(_ queue: ByteQueue) -> String { String(decoding: queue.removeAll(), as: UTF8.self) }

    func testAppendsEveryFormInOrder() {
        XCTAssertTrue(queue.isEmpty)
        XCTAssertTrue(queue.append("static "))
        XCTAssertTrue(queue.append(Array("array ".utf8)))
        let raw = Array("raw ".utf8)
        raw.withUnsafeBytes { XCTAssertTrue(queue.append($0)) }
        raw.withUnsafeBytes { XCTAssertTrue(queue.append($0.baseAddress, count: 2)) }
        XCTAssertEqual(queue.count, 19)
        XCTAssertFalse(queue.isEmpty)
        XCTAssertEqual(text(queue), "static array raw ra")
        XCTAssertTrue(queue.isEmpty)
    }

    func testDrainDiscardsTheFrontAndStopsAtTheEnd() {
        queue.append("abcdef")
        queue.drain(2)
        XCTAssertEqual(queue.count, 4)
        queue.drain(100)
        XCTAssertEqual(queue.count, 0)
    }

    func testMoveHandsEverythingOverAndLeavesTheSourceEmpty() {
        other.append("first ")
        queue.append("second")
        XCTAssertTrue(queue.move(to: other))
        XCTAssertTrue(queue.isEmpty)
        XCTAssertEqual(text(other), "first second")
    }

    func testMoveWithAMaximumMovesOnlyThatMuch() {
        queue.append("0123456789")
        XCTAssertEqual(queue.move(to: other, max: 4), 4)
        XCTAssertEqual(queue.move(to: other, max: 0), 0)
        XCTAssertEqual(text(other), "0123")
        XCTAssertEqual(queue.move(to: other, max: 100), 6)
        XCTAssertEqual(text(other), "456789")
        XCTAssertTrue(queue.isEmpty)
    }

    func testPrefixIsContiguousAcrossAppendsAndClampedToTheCount() {
        // Several appends and a move make several blocks; the prefix joins them.
        queue.append("GET / HTTP/1.1\r\n")
        other.append("Host: a\r\n\r\nbody")
        other.move(to: queue)
        let head = queue.withPrefix(max: 27) { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(head, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        XCTAssertEqual(queue.withPrefix(max: 1_000) { $0.count }, 31)
        XCTAssertEqual(queue.unsafePrefix(3).map { Array($0) }, Array("GET".utf8))
        XCTAssertNil(queue.unsafePrefix(32), "more than is queued")
        XCTAssertEqual(queue.count, 31, "reading a prefix removes nothing")
    }

    func testPrefixOfAnEmptyQueueIsNilAndDoesNotRunTheBody() {
        var ran = false
        let result: Int? = queue.withPrefix(max: 10) { _ in
            ran = true
            return 1
        }
        XCTAssertNil(result)
        XCTAssertFalse(ran)
        XCTAssertNil(queue.unsafePrefix(0))
    }

    func testPrefixPassesTypedErrorsThrough() {
        struct Refused: Error, Equatable {}
        queue.append("x")
        XCTAssertThrowsError(try queue.withPrefix(max: 1) { _ throws(Refused) in throw Refused() }) {
            XCTAssertEqual($0 as? Refused, Refused())
        }
    }

    func testCopyPrefixKeepsAndRemoveTakes() {
        queue.append("abcdef")
        var copy = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(copy.withUnsafeMutableBytes { queue.copyPrefix(into: $0) }, 4)
        XCTAssertEqual(copy, Array("abcd".utf8))
        XCTAssertEqual(queue.count, 6)
        var taken = [UInt8](repeating: 0, count: 10)
        XCTAssertEqual(taken.withUnsafeMutableBytes { queue.remove(into: $0) }, 6)
        XCTAssertEqual(Array(taken.prefix(6)), Array("abcdef".utf8))
        XCTAssertTrue(queue.isEmpty)
        XCTAssertEqual(queue.removeAll(), [])
    }

    func testReservedSpaceIsQueuedOnlyWhenCommitted() {
        queue.append("head:")
        guard var reservation = queue.reserve(64) else { return XCTFail("no space") }
        XCTAssertEqual(reservation.count, 64)
        let written = Array("value".utf8)
        written.withUnsafeBytes { reservation.base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        XCTAssertEqual(queue.count, 5, "nothing is queued before the commit")
        XCTAssertTrue(reservation.commit(written.count))
        XCTAssertEqual(text(queue), "head:value")
    }
}
