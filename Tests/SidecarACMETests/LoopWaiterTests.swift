import Glibc
import SidecarEvent
import XCTest

@testable import SidecarACME

/// The ACME thread waits on its own loop; a stop rung from another thread (the process
/// stopping) must end the wait under way at once and refuse every later one, or the join
/// at exit would wait out a renewal sleep of hours.
final class LoopWaiterTests: XCTestCase {
    func testAStopRungFromAnotherThreadEndsASleepAndEveryLaterWait() throws {
        let loop = try EventLoop()
        let waiter = LoopWaiter(loop: loop)
        let channel = try WakeupChannel()
        let stopWakeup = Wakeup(loop: loop, channel: channel) { waiter.stop() }
        let ringer = try WorkerThread {
            usleep(50_000)
            channel.notify()
        }
        var started = timespec()
        clock_gettime(CLOCK_MONOTONIC, &started)
        waiter.sleep(milliseconds: 600_000)
        var ended = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ended)
        ringer.join()
        XCTAssertLessThan(ended.tv_sec - started.tv_sec, 10, "the sleep outlasted the stop")
        XCTAssertTrue(waiter.isStopped)
        var begun = false
        let answer: Int? = waiter.waitUnlessStopped { done in
            begun = true
            done(1)
        }
        XCTAssertNil(answer)
        XCTAssertFalse(begun, "work began after the stop")
        withExtendedLifetime(stopWakeup) {}
    }

    func testAWaitThatCompletesReturnsItsValue() throws {
        let loop = try EventLoop()
        let waiter = LoopWaiter(loop: loop)
        let timer = Timer(loop: loop)
        let answer: Int? = waiter.waitUnlessStopped { done in
            timer.onFire { done(42) }
            timer.schedule(afterMilliseconds: 1)
        }
        XCTAssertEqual(answer, 42)
        XCTAssertFalse(waiter.isStopped)
    }
}
