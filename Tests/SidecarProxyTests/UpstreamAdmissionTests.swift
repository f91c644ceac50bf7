import XCTest
import SidecarEvent
@testable import SidecarProxy

/// The caps on upstream connections (`UpstreamAdmission`), the queue of exchanges waiting
/// for one (`UpstreamWaitList`), and the descriptor budget they keep (`DescriptorLimit`).
final class UpstreamAdmissionTests: XCTestCase {
    private typealias Counts = UpstreamAdmission.Counts

    private func decide(_ counts: Counts) -> UpstreamAdmission { UpstreamAdmission.decide(counts) }

    func testAnHTTP1ExchangeReusesOrOpensUnderTheBudget() {
        XCTAssertEqual(decide(Counts(idleInPool: 2, openInPool: 2, openInWorker: 2, workerLimit: 10)), .reuse)
        XCTAssertEqual(decide(Counts(openInPool: 2, openInWorker: 2, workerLimit: 10)), .open)
        // A retry must not take an idle connection: it opens one.
        XCTAssertEqual(decide(Counts(idleInPool: 2, openInPool: 2, openInWorker: 2, workerLimit: 10, fresh: true)), .open)
    }

    func testAClientConnectionAtItsCapWaitsWhateverIsIdle() {
        XCTAssertEqual(decide(Counts(held: 32, clientLimit: 32, idleInPool: 5, openInPool: 40, workerLimit: 100)), .wait)
        XCTAssertEqual(decide(Counts(held: 31, clientLimit: 32, idleInPool: 5, openInPool: 40, workerLimit: 100)), .reuse)
        XCTAssertEqual(decide(Counts(held: 31, clientLimit: 32, openInPool: 40, openInWorker: 40, workerLimit: 100)), .open)
    }

    func testAnUpstreamAtItsCapWaitsOrReplacesAnIdleConnection() {
        XCTAssertEqual(decide(Counts(openInPool: 4, poolLimit: 4, openInWorker: 4, workerLimit: 100)), .wait)
        XCTAssertEqual(decide(Counts(idleInPool: 1, openInPool: 4, poolLimit: 4, openInWorker: 4, workerLimit: 100)), .reuse)
        XCTAssertEqual(
            decide(Counts(idleInPool: 1, openInPool: 4, poolLimit: 4, openInWorker: 4, workerLimit: 100, fresh: true)),
            .openAfterClosingIdle)
        XCTAssertEqual(decide(Counts(openInPool: 3, poolLimit: 4, openInWorker: 3, workerLimit: 100)), .open)
        // 0: no cap of its own.
        XCTAssertEqual(decide(Counts(openInPool: 99, poolLimit: 0, openInWorker: 99, workerLimit: 100)), .open)
    }

    func testTheWorkersBudgetClosesIdleConnectionsOfOtherUpstreamsBeforeAnyoneWaits() {
        XCTAssertEqual(decide(Counts(openInPool: 10, openInWorker: 100, workerLimit: 100, idleInWorker: 3)), .openAfterClosingIdle)
        XCTAssertEqual(decide(Counts(openInPool: 10, openInWorker: 100, workerLimit: 100)), .wait)
    }

    private final class Waiter {
        let name: String
        var mayProceed: Bool
        init(_ name: String, mayProceed: Bool) {
            self.name = name
            self.mayProceed = mayProceed
        }
    }

    func testTheQueueAdmitsOldestFirstAndKeepsTheOrderOfThoseStillWaiting() {
        let list = UpstreamWaitList<Waiter>()
        let a = Waiter("a", mayProceed: false), b = Waiter("b", mayProceed: true), c = Waiter("c", mayProceed: false)
        let d = Waiter("d", mayProceed: true)
        for waiter in [a, b, c, d] { list.append(waiter) }
        var admitted: [String] = []
        list.admit(mayProceed: { $0.mayProceed }, proceed: { admitted.append($0.name) })
        XCTAssertEqual(admitted, ["b", "d"])
        XCTAssertEqual(list.count, 2)
        c.mayProceed = true
        a.mayProceed = true
        list.admit(mayProceed: { $0.mayProceed }, proceed: { admitted.append($0.name) })
        XCTAssertEqual(admitted, ["b", "d", "a", "c"])
        XCTAssertTrue(list.isEmpty)
    }

    func testWaitersQueuedOrRemovedDuringAPassAreHandled() {
        let list = UpstreamWaitList<Waiter>()
        let a = Waiter("a", mayProceed: true), b = Waiter("b", mayProceed: false), late = Waiter("late", mayProceed: true)
        list.append(a)
        list.append(b)
        var admitted: [String] = []
        list.admit(mayProceed: { $0.mayProceed }, proceed: { waiter in
            admitted.append(waiter.name)
            if waiter === a {
                list.remove(b)  // its exchange ended meanwhile
                list.append(late)  // a retry that must queue again
            }
        })
        XCTAssertEqual(admitted, ["a", "late"])
        XCTAssertTrue(list.isEmpty)
        list.remove(a)  // not there: nothing happens
    }

    func testAWorkersShareOfACapIsRoundedUpAndZeroMeansNone() {
        XCTAssertEqual(UpstreamPools.share(of: 0, workers: 4), 0)
        XCTAssertEqual(UpstreamPools.share(of: 10, workers: 4), 3)
        XCTAssertEqual(UpstreamPools.share(of: 1, workers: 4), 1)
        XCTAssertEqual(UpstreamPools.share(of: 8, workers: 1), 8)
    }

    // MARK: the descriptor budget

    private func limits(_ n: UInt64) -> DescriptorLimit.Limits { .init(soft: n, hard: n) }

    func testTheReserveScalesWithASmallLimit() {
        XCTAssertEqual(DescriptorLimit.reserve(limit: 64), 32)
        XCTAssertEqual(DescriptorLimit.reserve(limit: 128), 64)
        XCTAssertEqual(DescriptorLimit.reserve(limit: 256), 128)
        XCTAssertEqual(DescriptorLimit.reserve(limit: 1_048_576), 128)
        XCTAssertEqual(DescriptorLimit.fittingConnections(limits: limits(64)), 16)
        XCTAssertEqual(DescriptorLimit.fittingConnections(limits: limits(128)), 32)
        XCTAssertEqual(DescriptorLimit.fittingConnections(limits: limits(256)), 64)
        XCTAssertEqual(DescriptorLimit.fittingConnections(limits: limits(1024)), 448)
        XCTAssertEqual(DescriptorLimit.fittingConnections(limits: limits(1)), 1)
    }

    func testAnAutomaticMaxConnectionsWarnsWhenFewClientsFit() throws {
        let small = try XCTUnwrap(DescriptorLimit.automatic(defaultConnections: 10_000, limits: limits(128)))
        XCTAssertEqual(small.connections, 32)
        XCTAssertTrue(small.warn)
        XCTAssertTrue(small.message.hasPrefix("limits.max_connections: 32, "), small.message)
        XCTAssertTrue(small.message.contains("the limit is 128, 64 kept aside"), small.message)
        let enough = try XCTUnwrap(DescriptorLimit.automatic(defaultConnections: 10_000, limits: limits(1024)))
        XCTAssertEqual(enough.connections, 448)
        XCTAssertFalse(enough.warn)
        XCTAssertNil(DescriptorLimit.automatic(defaultConnections: 10_000, limits: limits(1 << 20)))
    }

    func testTheShortfallCountsTwoPerConnectionAndTheScaledReserve() {
        XCTAssertNil(DescriptorLimit.shortfall(maxConnections: 32, limits: limits(128)))  // 32 x 2 + 64 = 128
        let warning = DescriptorLimit.shortfall(maxConnections: 100, limits: limits(128)) ?? ""
        XCTAssertTrue(warning.contains("100 connections need about 264 file descriptors (2 per proxied connection + 64)"), warning)
        XCTAssertTrue(warning.hasSuffix("lower max_connections to 32"), warning)
    }
}
