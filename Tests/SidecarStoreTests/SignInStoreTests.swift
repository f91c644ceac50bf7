import Glibc
import XCTest

@testable import SidecarStore

/// A user's last sign-in: kept by the file store across a restart and a compaction, the newer
/// of two kept, forgotten after `SignInRecord.retentionSeconds`.
final class SignInStoreTests: FileStoreTestCase {
    func testTheLastSignInSurvivesReopenAndCompaction() throws {
        let store = try open()
        let nowMs = clock.now * 1000
        try store.recordSignIn("sub.a", SignInRecord(atMs: nowMs - 5_000, platform: "web"))
        try store.recordSignIn("sub.a", SignInRecord(atMs: nowMs, platform: "native:com.example.ios"))
        try store.recordSignIn("sub.b", SignInRecord(atMs: nowMs - 1, platform: "web"))
        XCTAssertEqual(try store.lastSignIn("sub.a"), SignInRecord(atMs: nowMs, platform: "native:com.example.ios"))
        XCTAssertNil(try store.lastSignIn("sub.c"))
        store.close()

        let reopened = try open()
        XCTAssertEqual(reopened.openingNotes, [])
        XCTAssertEqual(try reopened.lastSignIn("sub.a"), SignInRecord(atMs: nowMs, platform: "native:com.example.ios"),
                       "the later of the two records wins on replay too")
        try reopened.compact()
        reopened.close()
        let compacted = try open()
        XCTAssertEqual(try compacted.lastSignIn("sub.b"), SignInRecord(atMs: nowMs - 1, platform: "web"))
        compacted.close()

        // Past the retention, a compaction forgets it.
        clock.advance(SignInRecord.retentionSeconds + 1)
        let later = try open()
        try later.compact()
        later.close()
        XCTAssertNil(try open().lastSignIn("sub.b"))
    }

    func testBadSubjectsAndPlatformsAreRefused() throws {
        let store = try open()
        XCTAssertThrowsError(try store.recordSignIn("", SignInRecord(atMs: 1, platform: "web")))
        XCTAssertThrowsError(try store.recordSignIn("sub", SignInRecord(atMs: 1, platform: "")))
        XCTAssertThrowsError(try store.recordSignIn("sub", SignInRecord(atMs: 1, platform: String(repeating: "p", count: 256))))
        let memory = MemoryStore()
        try memory.recordSignIn("sub", SignInRecord(atMs: 1, platform: "web"))
        XCTAssertEqual(try memory.lastSignIn("sub")?.platform, "web")
    }
}
