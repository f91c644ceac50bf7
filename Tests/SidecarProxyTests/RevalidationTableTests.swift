import SidecarStore
import XCTest

@testable import SidecarProxy

/// `session.revalidate`'s shared table: one check per session at a time, a confirmation handed
/// to tokens that do not carry it, a 5-minute pause after Apple could not answer, bounded.
final class RevalidationTableTests: XCTestCase {
    private let id = Key128(high: 1, low: 2)

    func testOneCheckAtATimeThenTheConfirmationForOlderTokens() {
        let table = RevalidationTable()
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 100, now: 100), .start)
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 100, now: 101), .wait(until: 102))
        table.finish(id, .confirmed(at: 103))
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 100, now: 104), .confirmed(103))
        // A token already carrying it is not due before its period; a period on, a new check.
        XCTAssertEqual(table.decide(id, lastRevalidation: 103, period: 100, now: 150), .wait(until: 203))
        XCTAssertEqual(table.decide(id, lastRevalidation: 103, period: 100, now: 203), .start)
    }

    func testAnInconclusiveCheckIsRetriedFiveMinutesLaterAtTheEarliest() {
        let table = RevalidationTable()
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 2, now: 10), .start)
        table.finish(id, .unconfirmed(at: 11))
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 2, now: 12), .wait(until: 311))
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 2, now: 310), .wait(until: 311))
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 2, now: 311), .start)
        table.finish(id, nil)
        XCTAssertEqual(table.count, 0)
    }

    func testALostCheckIsStartedAgainAndTheTableIsBounded() {
        let table = RevalidationTable(capacity: 4)
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 100, now: 0), .start)
        XCTAssertEqual(table.decide(id, lastRevalidation: 0, period: 100, now: RevalidationTable.inFlightSeconds), .start)
        for n in 10..<13 { XCTAssertEqual(table.decide(Key128(high: 0, low: UInt64(n)), lastRevalidation: 0, period: 100, now: 100), .start) }
        XCTAssertEqual(table.decide(Key128(high: 0, low: 99), lastRevalidation: 0, period: 100, now: 100), .full)
        // Stale entries are swept when room is needed.
        let later = 100 + RevalidationTable.inFlightSeconds
        XCTAssertEqual(table.decide(Key128(high: 0, low: 99), lastRevalidation: 0, period: 100, now: later), .start)
        XCTAssertEqual(table.count, 1)
    }
}
