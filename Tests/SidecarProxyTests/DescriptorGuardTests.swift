import XCTest
@testable import SidecarProxy

/// What the descriptor guard closes at the limit: idle connections, then unfinished heads,
/// and only when neither is left, the oldest streams of the busiest HTTP/2 connection.
final class DescriptorGuardTests: XCTestCase {
    private final class Fake: FrontConnection {
        let openedMs: Int64
        let isIdle: Bool
        let isReadingHead: Bool
        let upstreamsHeld: Int
        var closed = false
        var shedAsked = 0

        init(openedMs: Int64, idle: Bool = false, head: Bool = false, upstreams: Int = 0) {
            self.openedMs = openedMs
            isIdle = idle
            isReadingHead = head
            upstreamsHeld = upstreams
        }

        func shed(_ count: Int) -> Int {
            shedAsked = count
            return min(count, upstreamsHeld)
        }

        func drain() {}
        func closeIfIdle() {}
        func close() { closed = true }
    }

    func testIdleConnectionsThenHeadsOldestFirstAndBusyOnesAreKept() {
        let busy = Fake(openedMs: 0, upstreams: 30)
        let heads = (1...5).map { Fake(openedMs: Int64(100 + $0), head: true) }
        let idle = (1...5).map { Fake(openedMs: Int64(200 + $0), idle: true) }
        let freed = DescriptorGuard.freeSlots(in: [busy] + heads + idle, upstreams: [])
        XCTAssertEqual(freed, 8)
        XCTAssertTrue(idle.allSatisfy(\.closed))
        XCTAssertEqual(heads.map(\.closed), [true, true, true, false, false])
        XCTAssertFalse(busy.closed)
        XCTAssertEqual(busy.shedAsked, 0, "something else could be freed")
    }

    func testWithNothingElseTheBusiestConnectionSheds() {
        let quiet = Fake(openedMs: 0, upstreams: 1)
        let busiest = Fake(openedMs: 5, upstreams: 32)
        let busy = Fake(openedMs: 1, upstreams: 20)
        let freed = DescriptorGuard.freeSlots(in: [quiet, busiest, busy], upstreams: [])
        XCTAssertEqual(freed, 8)
        XCTAssertEqual(busiest.shedAsked, 8)
        XCTAssertEqual(busy.shedAsked, 0)
        XCTAssertFalse(busiest.closed || busy.closed || quiet.closed)
    }

    func testAConnectionHoldingOneUpstreamIsNeverShed() {
        let single = Fake(openedMs: 0, upstreams: 1)
        XCTAssertEqual(DescriptorGuard.freeSlots(in: [single], upstreams: []), 0)
        XCTAssertEqual(single.shedAsked, 0)
    }
}
