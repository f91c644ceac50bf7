import Glibc
import XCTest

@testable import SidecarStore

/// A user's kept refresh token (`users.keep_refresh_tokens`): the file store keeps the newer
/// across a restart and a compaction, forgets it when told (and the forgetting survives a
/// replay), and forgets it after the retention.
final class KeptRefreshTokenStoreTests: FileStoreTestCase {
    func testTheNewerTokenSurvivesReopenAndCompactionAndForgettingIsReplayed() throws {
        let store = try open()
        let nowMs = clock.now * 1000
        try store.keepRefreshToken("sub.a", KeptRefreshToken(atMs: nowMs, sealed: "AQID-new"))
        try store.keepRefreshToken("sub.a", KeptRefreshToken(atMs: nowMs - 5_000, sealed: "AQID-older"))
        try store.keepRefreshToken("sub.b", KeptRefreshToken(atMs: nowMs - 1, sealed: "AQID-b"))
        try store.keepRefreshToken("sub.c", KeptRefreshToken(atMs: nowMs - 1, sealed: "AQID-c"))
        XCTAssertEqual(try store.keptRefreshToken("sub.a"), KeptRefreshToken(atMs: nowMs, sealed: "AQID-new"))
        try store.forgetRefreshToken("sub.c")
        try store.forgetRefreshToken("sub.never")
        XCTAssertNil(try store.keptRefreshToken("sub.c"))
        store.close()

        let reopened = try open()
        XCTAssertEqual(reopened.openingNotes, [])
        XCTAssertEqual(try reopened.keptRefreshToken("sub.a")?.sealed, "AQID-new", "the newer wins on replay too")
        XCTAssertNil(try reopened.keptRefreshToken("sub.c"), "the forgetting is replayed")
        try reopened.compact()
        reopened.close()
        let compacted = try open()
        XCTAssertEqual(try compacted.keptRefreshToken("sub.b"), KeptRefreshToken(atMs: nowMs - 1, sealed: "AQID-b"))
        XCTAssertNil(try compacted.keptRefreshToken("sub.c"))
        compacted.close()

        clock.advance(KeptRefreshToken.retentionSeconds + 1)
        let later = try open()
        try later.compact()
        later.close()
        XCTAssertNil(try open().keptRefreshToken("sub.b"))
    }

    func testTheLogRecordsRoundTrip() throws {
        for record in [LogRecord.keepRefreshToken("001.ab.2", KeptRefreshToken(atMs: 1_700_000_000_123, sealed: "AQIDBA_-")),
                       LogRecord.forgetRefreshToken("001.ab.2")] {
            let framed = record.framed()
            XCTAssertEqual(framed.count, record.framedByteCount)
            let decoded = framed.withUnsafeBytes { LogRecord.decode(body: UnsafeRawBufferPointer(rebasing: $0[LogRecord.frameHeaderBytes...])) }
            XCTAssertEqual(decoded, record)
        }
    }

    func testBadValuesAreRefusedAndTheMemoryStoreKeepsToo() throws {
        let store = try open()
        XCTAssertThrowsError(try store.keepRefreshToken("", KeptRefreshToken(atMs: 1, sealed: "x")))
        XCTAssertThrowsError(try store.keepRefreshToken("sub", KeptRefreshToken(atMs: 1, sealed: "")))
        XCTAssertThrowsError(try store.keepRefreshToken("sub", KeptRefreshToken(atMs: 1, sealed: "a b")))
        XCTAssertThrowsError(try store.keepRefreshToken("sub", KeptRefreshToken(atMs: 1, sealed: String(repeating: "a", count: 4097))))
        let memory = MemoryStore()
        try memory.keepRefreshToken("sub", KeptRefreshToken(atMs: 1, sealed: "s"))
        XCTAssertEqual(try memory.keptRefreshToken("sub")?.sealed, "s")
        try memory.forgetRefreshToken("sub")
        XCTAssertNil(try memory.keptRefreshToken("sub"))
    }
}
