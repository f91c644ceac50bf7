import Glibc
import SidecarEvent
import XCTest

/// A timer never fires before its duration by a fresh `CLOCK_MONOTONIC` read taken when it was
/// armed, however long the iteration that armed it had run already (the loop's cached time is
/// that much in the past) and whatever the kernel's coarse clock says. These drive a real loop.
final class TimerMinimumTests: XCTestCase {
    private static func monotonicMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1_000
    }

    /// Armed 60 ms into an iteration: counted from the iteration's wake-up it would fire
    /// 60 ms early.
    func testATimerArmedLateInALongIterationWaitsItsWholeDuration() throws {
        let loop = try EventLoop()
        var armedAt: Int64 = 0, firedAt: Int64 = 0
        let timer = SidecarEvent.Timer(loop: loop) {
            firedAt = Self.monotonicMicroseconds()
            loop.stop()
        }
        let longIteration = SidecarEvent.Timer(loop: loop) {
            usleep(60_000)
            armedAt = Self.monotonicMicroseconds()
            timer.schedule(afterMilliseconds: 100)
        }
        longIteration.schedule(afterMilliseconds: 1)
        let guardTimer = SidecarEvent.Timer(loop: loop) { XCTFail("loop did not stop"); loop.stop() }
        guardTimer.schedule(afterMilliseconds: 5_000)
        loop.run()
        XCTAssertNotEqual(firedAt, 0, "the timer fired")
        XCTAssertGreaterThanOrEqual(firedAt - armedAt, 100_000, "fired before its 100 ms by a fresh clock")
    }

    /// Short timers armed at random points of busy iterations, again and again: a clock that
    /// lags (libevent's default CLOCK_MONOTONIC_COARSE, a scheduler tick behind) lets some of
    /// them fire up to a tick early.
    func testShortTimersArmedAtRandomPointsNeverFireEarly() throws {
        let loop = try EventLoop()
        var early: [Int64] = []
        var remaining = 40
        var current: SidecarEvent.Timer?
        func armNext() {
            remaining -= 1
            usleep(UInt32.random(in: 0...3_000))  // somewhere inside the iteration
            let duration = Int64.random(in: 2...12)
            let armedAt = Self.monotonicMicroseconds()
            current = SidecarEvent.Timer(loop: loop) {
                let elapsed = Self.monotonicMicroseconds() - armedAt
                if elapsed < duration * 1_000 { early.append(duration * 1_000 - elapsed) }
                if remaining > 0 { armNext() } else { loop.stop() }
            }
            current?.schedule(afterMilliseconds: duration)
        }
        let start = SidecarEvent.Timer(loop: loop) { armNext() }
        start.schedule(afterMilliseconds: 0)
        let guardTimer = SidecarEvent.Timer(loop: loop) { XCTFail("loop did not stop"); loop.stop() }
        guardTimer.schedule(afterMilliseconds: 10_000)
        loop.run()
        XCTAssertEqual(remaining, 0)
        XCTAssertEqual(early, [], "timers fired this many microseconds before their duration")
    }

    func testARefreshedTimeIncludesTheIterationSoFar() throws {
        let loop = try EventLoop()
        var cached: Int64 = 0, refreshed: Int64 = 0, after: Int64 = 0
        loop.runTwoIterations({
            cached = loop.nowMilliseconds
            usleep(50_000)
            refreshed = loop.refreshedNowMilliseconds()
            after = loop.nowMilliseconds
        }, after: {})
        XCTAssertGreaterThanOrEqual(refreshed - cached, 50, "the refreshed time counts the 50 ms slept")
        XCTAssertEqual(after, refreshed, "and stays the iteration's time from there on")
    }
}
