import SidecarCrypto
import XCTest

@testable import SidecarProxy

final class UsedLoginStatesTests: XCTestCase {
    private func digest(_ i: Int) -> [UInt8] { SHA256.hash(Array("state-\(i)".utf8)) }

    func testASecondUseIsRefusedUntilTheStateExpires() {
        let used = UsedLoginStates(lifetime: 600)
        XCTAssertTrue(used.markUsed(digest(1), until: 600, now: 0))
        XCTAssertFalse(used.markUsed(digest(1), until: 600, now: 10))
        XCTAssertTrue(used.markUsed(digest(2), until: 600, now: 10))
        XCTAssertTrue(used.markUsed(digest(1), until: 1300, now: 700))  // expired: forgotten
    }

    func testAGenerationChangeNeverForgetsAnUnexpiredState() {
        let used = UsedLoginStates(lifetime: 600)
        XCTAssertTrue(used.markUsed(digest(0), until: 600, now: 0))
        XCTAssertTrue(used.markUsed(digest(1), until: 1199, now: 599))
        XCTAssertTrue(used.markUsed(digest(2), until: 1250, now: 650))  // rotates
        XCTAssertFalse(used.markUsed(digest(1), until: 1199, now: 1198))
        XCTAssertTrue(used.markUsed(digest(3), until: 1900, now: 1300))  // rotates again
        XCTAssertFalse(used.markUsed(digest(2), until: 1250, now: 1249 - 1))
    }

    /// A flood of login states (anyone can make them) keeps at most two generations (this
    /// once grew without bound and ran a full scan per mark past 4096 entries).
    func testAFloodIsBoundedInMemoryAndTime() {
        let used = UsedLoginStates(lifetime: 600, generationCapacity: 1_000)
        for i in 0..<20_000 { XCTAssertTrue(used.markUsed(digest(i), until: 600, now: 1)) }
        XCTAssertLessThanOrEqual(used.count, 2 * used.generationCapacity)
        XCTAssertFalse(used.markUsed(digest(19_999), until: 600, now: 2))  // the newest still count

        let big = UsedLoginStates(lifetime: 600)
        for i in 0..<150_000 { _ = big.markUsed(digest(i), until: 600, now: 1) }
        XCTAssertLessThanOrEqual(big.count, 2 * big.generationCapacity)
    }
}
