import XCTest

@testable import SidecarProxy

/// `tracing.max_incoming_sampled_per_second`: a worker's bucket of honoured sampled flags.
final class SampledTraceBudgetTests: XCTestCase {
    func testABurstOfASecondsWorthThenTheRefillRate() {
        var budget = SampledTraceBudget(perSecond: 10, nowMs: 1_000)
        XCTAssertEqual((0..<25).filter { _ in budget.admit(nowMs: 1_000) }.count, 10)
        XCTAssertFalse(budget.admit(nowMs: 1_050))
        XCTAssertTrue(budget.admit(nowMs: 1_100), "one more every 100 ms")
        XCTAssertFalse(budget.admit(nowMs: 1_100))
        XCTAssertEqual((0..<25).filter { _ in budget.admit(nowMs: 60_000) }.count, 10, "never more than a second's worth")
    }

    func testAShareBelowOneStillAdmitsOneAtATime() {
        var budget = SampledTraceBudget(perSecond: 0.5, nowMs: 0)
        XCTAssertTrue(budget.admit(nowMs: 0))
        XCTAssertFalse(budget.admit(nowMs: 1_000))
        XCTAssertTrue(budget.admit(nowMs: 2_000))
    }

    func testZeroAdmitsNone() {
        var budget = SampledTraceBudget(perSecond: 0, nowMs: 0)
        XCTAssertFalse(budget.admit(nowMs: 0))
        XCTAssertFalse(budget.admit(nowMs: 1_000_000))
    }

    func testAnUnsizedBudgetFillsAtItsFirstUse() {
        var budget = SampledTraceBudget(perSecond: 0, nowMs: nil)
        budget.resize(perSecond: 3)
        XCTAssertEqual((0..<10).filter { _ in budget.admit(nowMs: 5) }.count, 3)
    }

    func testAResizeKeepsNoMoreThanTheNewCapacity() {
        var budget = SampledTraceBudget(perSecond: 100, nowMs: 0)
        budget.resize(perSecond: 2)
        XCTAssertEqual((0..<10).filter { _ in budget.admit(nowMs: 0) }.count, 2)
        budget.resize(perSecond: 0)
        XCTAssertFalse(budget.admit(nowMs: 10_000))
    }
}
