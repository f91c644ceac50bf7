import Glibc
import SidecarEvent
import XCTest

/// `EventLoop.nowMilliseconds` is read once per iteration of `run` and kept for the rest of
/// it (the proxy asks ~10 times per request). These drive a real loop: every callback of an
/// iteration sees the time the iteration woke at, the next iteration sees a later one (a
/// cache never emptied would freeze deadlines), and outside `run` the clock is read each time.
/// (50 ms asleep, 30 ms asserted: libevent's cached time is its monotonic clock plus an offset
/// to the wall clock it refreshes every few seconds, so it and a fresh read differ by a little.)
final class LoopTimeTests: XCTestCase {
    func testOneTimePerIterationAndALaterOneInTheNext() throws {
        let loop = try EventLoop()
        var first: Int64 = 0, firstAgain: Int64 = 0, second: Int64 = 0
        loop.runTwoIterations({
            first = loop.nowMilliseconds
            usleep(50_000)
            firstAgain = loop.nowMilliseconds
        }, after: {
            second = loop.nowMilliseconds
        })
        XCTAssertGreaterThan(first, 0)
        XCTAssertEqual(firstAgain, first, "one iteration, one time")
        XCTAssertGreaterThanOrEqual(second - first, 30, "the next iteration reads the clock again")
    }

    func testOutsideRunTheClockIsReadEachTime() throws {
        let loop = try EventLoop()
        let before = loop.nowMilliseconds
        usleep(50_000)
        XCTAssertGreaterThanOrEqual(loop.nowMilliseconds - before, 30)
    }

    func testAfterRunReturnsTheClockIsReadAgain() throws {
        let loop = try EventLoop()
        var during: Int64 = 0
        loop.runTwoIterations({ during = loop.nowMilliseconds }, after: {})
        usleep(50_000)
        XCTAssertGreaterThanOrEqual(loop.nowMilliseconds - during, 30)
    }
}
