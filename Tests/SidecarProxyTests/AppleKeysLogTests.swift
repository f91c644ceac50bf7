import SidecarApple
import XCTest

@testable import SidecarProxy

/// Apple being unreachable at start-up was logged once per worker and retry, said
/// "keeping the previous set" when there was none, and did not name the URL.
final class AppleKeysLogTests: XCTestCase {
    func testAnOutageIsOneWarningForTheWholeProcess() {
        let log = AppleKeysLog()
        XCTAssertTrue(log.failed(), "the first failure of an outage is reported")
        XCTAssertFalse(log.failed(), "the second worker's failure is not")
        XCTAssertFalse(log.failed(), "nor a retry")
        XCTAssertEqual(log.fetched(keyIDs: ["a", "b"]), .recovered(failures: 3))
        XCTAssertEqual(log.fetched(keyIDs: ["a", "b"]), .known, "the other worker's fetch of the same set")
        XCTAssertTrue(log.failed(), "a later outage is news again")
    }

    func testANewKeySetIsAnnouncedOnce() {
        let log = AppleKeysLog()
        XCTAssertEqual(log.fetched(keyIDs: ["a"]), .newSet)
        XCTAssertEqual(log.fetched(keyIDs: ["a"]), .known)
        XCTAssertEqual(log.fetched(keyIDs: ["a", "b"]), .newSet, "Apple rotated its keys")
    }

    func testFailuresAreExplainedInWords() {
        XCTAssertEqual(AppleKeys.explain(.transport(.connectFailed)), "connection refused or host unreachable")
        XCTAssertEqual(AppleKeys.explain(.transport(.dnsFailure)), "host name not found")
        XCTAssertEqual(AppleKeys.explain(.transport(.tlsHandshakeFailed(verifyResult: 62))),
                       "TLS certificate not accepted: OpenSSL verify result 62")
        XCTAssertEqual(AppleKeys.explain(.appleServerError(status: 503)), "HTTP 503")
    }

    func testTimestampsAreUTC() {
        XCTAssertEqual(AppleKeys.timestamp(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(AppleKeys.timestamp(1_795_000_000), "2026-11-18T11:06:40Z")
    }
}
