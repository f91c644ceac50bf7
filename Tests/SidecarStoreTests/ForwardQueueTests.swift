import XCTest

@testable import SidecarStore

final class ForwardQueueTests: XCTestCase {
    let clock = ManualClock()

    func testEnqueueAckAndPendingInOrder() throws {
        try eachStore(clock: clock) { store in
            let first = try store.enqueueForward(payload: Array(#"{"type":"consent-revoked"}"#.utf8))
            clock.advance(1)
            let second = try store.enqueueForward(payload: Array(#"{"type":"account-delete"}"#.utf8))
            XCTAssertLessThan(first, second)
            XCTAssertEqual(try store.pendingForwards().map(\.id), [first, second])
            XCTAssertEqual(try store.pendingForwards().first?.enqueuedAt, clock.now - 1)

            try store.recordForwardAttempt(first)
            clock.advance(5)
            try store.recordForwardAttempt(first)
            let pending = try store.pendingForwards()
            XCTAssertEqual(pending[0].attempts, 2)
            XCTAssertEqual(pending[0].lastAttemptAt, clock.now)
            XCTAssertNil(pending[1].lastAttemptAt)

            try store.ackForward(first)
            XCTAssertEqual(try store.pendingForwards().map(\.id), [second])
            try store.ackForward(first)  // twice: fine
            try store.recordForwardAttempt(first)  // unknown: fine
            try store.ackForward(second)
            XCTAssertEqual(try store.pendingForwards(), [])
            XCTAssertEqual(store.metrics.pendingForwards, 0)
        }
    }

    /// A full queue refuses with an error the caller logs; what is queued stays.
    func testAFullQueueRefusesAndNeverDropsSilently() throws {
        var limits = StoreLimits()
        limits.maximumPendingForwards = 3
        limits.maximumPendingForwardBytes = 100
        try eachStore(clock: clock, limits: limits) { store in
            for i in 0..<3 { _ = try store.enqueueForward(payload: [UInt8(i)]) }
            XCTAssertThrowsError(try store.enqueueForward(payload: [9])) { error in
                XCTAssertEqual(error as? StoreError, .forwardQueueFull(count: 3, bytes: 3))
            }
            XCTAssertEqual(try store.pendingForwards().map(\.payload), [[0], [1], [2]])
            try store.ackForward(try store.pendingForwards()[0].id)
            XCTAssertThrowsError(try store.enqueueForward(payload: [UInt8](repeating: 1, count: 99)))  // bytes bound
            XCTAssertNoThrow(try store.enqueueForward(payload: [UInt8](repeating: 1, count: 98)))
        }
    }

    func testAnOversizedPayloadIsRefused() throws {
        var limits = StoreLimits()
        limits.maximumForwardPayloadBytes = 10
        try eachStore(clock: clock, limits: limits) { store in
            XCTAssertThrowsError(try store.enqueueForward(payload: [UInt8](repeating: 0, count: 11))) { error in
                guard case .invalidArgument = error as? StoreError else { return XCTFail("\(error)") }
            }
        }
    }

    func testTheCompletionFormReportsTheID() throws {
        try eachStore(clock: clock) { store in
            let backend: any StoreBackend = store
            var ids: [ForwardID] = []
            backend.enqueueForward(payload: [1]) { ids.append(try! $0.get()) }
            backend.pendingForwards { XCTAssertEqual(try? $0.get().map(\.id), ids) }
            XCTAssertEqual(ids.count, 1)
        }
    }
}
