import Glibc
import XCTest

@testable import SidecarStore

final class FileStoreCompactionTests: FileStoreTestCase {
    func testCompactionDropsExpiredEntriesAndKeepsLiveOnesAcrossReopen() throws {
        let store = try open()
        for i in 0..<200 {
            try store.revokeSession(id: sessionID(i), expiresAt: clock.now + (i < 100 ? 50 : 5000))
            _ = store.claim(.loginState, key: "state-\(i)", expiresAt: clock.now + (i < 100 ? 50 : 5000))
        }
        try store.revokeSubject("gone", issuedAtOrBeforeMs: 1, keepUntil: clock.now + 50)
        try store.revokeSubject("kept", issuedAtOrBeforeMs: 1, keepUntil: clock.now + 5000)
        var forwards: [ForwardID] = []
        for i in 0..<10 { forwards.append(try store.enqueueForward(payload: [UInt8(i)])) }
        for id in forwards.prefix(9) { try store.ackForward(id) }
        let sizeBefore = Files.size(path)

        clock.advance(100)
        try store.compact()
        XCTAssertLessThan(Files.size(path), sizeBefore / 2)
        XCTAssertEqual(store.metrics.compactions, 1)
        XCTAssertEqual(store.metrics.fileBytes, UInt64(Files.size(path)))
        XCTAssertEqual(Files.names(in: directory.path), ["store"])
        XCTAssertEqual(Files.mode(path), 0o600)
        store.close()

        let reopened = try open()
        XCTAssertEqual(reopened.openingNotes, [])
        for i in [0, 99] {
            XCTAssertFalse(reopened.isRevoked(sessionID(i)))
            XCTAssertEqual(reopened.claim(.loginState, key: "state-\(i)", expiresAt: clock.now + 10), .claimed)
        }
        for i in [100, 199] {
            XCTAssertTrue(reopened.isRevoked(sessionID(i)))
            XCTAssertEqual(reopened.claim(.loginState, key: "state-\(i)", expiresAt: clock.now + 10), .alreadyUsed)
        }
        XCTAssertFalse(reopened.isRevoked(sessionID(0), subject: "gone", issuedAtMs: 1))
        XCTAssertTrue(reopened.isRevoked(sessionID(0), subject: "kept", issuedAtMs: 1))
        XCTAssertEqual(try reopened.pendingForwards().map(\.id), [forwards[9]])
        // The id sequence survives although the acknowledged forwards are gone from the file.
        XCTAssertEqual(try reopened.enqueueForward(payload: [0]).rawValue, forwards[9].rawValue + 1)
    }

    /// Under steady traffic whose entries expire, the log stays within a few times its
    /// live content instead of growing forever.
    func testTheLogIsCompactedAutomaticallyAsEntriesExpire() throws {
        var limits = StoreLimits()
        limits.compactionMinimumBytes = 4096
        let store = try open(limits)
        // At most ~100 claims (4.2 KB of records) are live at a time.
        for i in 0..<1_500 {
            if i > 0, i % 100 == 0 { clock.advance(10) }
            XCTAssertEqual(store.claim(.loginState, key: "s\(i)", expiresAt: clock.now + 5), .claimed)
        }
        XCTAssertGreaterThan(store.metrics.compactions, 3)
        // 42 bytes per record: 1,500 records would be ~62 KiB uncompacted; the log stays
        // under twice the larger of its live content and the minimum.
        XCTAssertLessThan(Files.size(path), 3 * 4096)
        XCTAssertEqual(store.claim(.loginState, key: "s1499", expiresAt: clock.now + 5), .alreadyUsed)
        store.close()
        let reopened = try open(limits)
        XCTAssertEqual(reopened.claim(.loginState, key: "s1499", expiresAt: clock.now + 5), .alreadyUsed)
        XCTAssertEqual(reopened.claim(.loginState, key: "s0", expiresAt: clock.now + 5), .claimed)
    }

    func testABloatedLogIsCompactedAtOpen() throws {
        var limits = StoreLimits()
        limits.compactionMinimumBytes = 4096
        limits.fileClaimCapacity = 10_000
        var store = try open(StoreLimits())  // no automatic compaction while writing
        for i in 0..<500 { _ = store.claim(.nativeNonce, key: "n\(i)", expiresAt: clock.now + 10) }
        _ = store.claim(.nativeNonce, key: "live", expiresAt: clock.now + 1000)
        store.close()
        clock.advance(20)
        store = try open(limits)
        XCTAssertTrue(store.openingNotes.contains { $0.contains("compacted at open") }, "\(store.openingNotes)")
        XCTAssertLessThan(Files.size(path), 200)
        XCTAssertEqual(store.claim(.nativeNonce, key: "live", expiresAt: clock.now + 1000), .alreadyUsed)
    }

    /// A store path that is a symbolic link stays one: compaction replaces the file it
    /// points to, not the link.
    func testCompactionThroughASymbolicLinkReplacesTheTarget() throws {
        XCTAssertEqual(mkdir(directory.file("data"), 0o700), 0)
        let target = directory.file("data/store")
        XCTAssertEqual(symlink(target, path), 0)
        let store = try open()
        XCTAssertEqual(store.claim(.loginState, key: "kept", expiresAt: clock.now + 60), .claimed)
        try store.compact()
        store.close()
        var status = stat()
        XCTAssertEqual(lstat(path, &status), 0)
        XCTAssertEqual(status.st_mode & S_IFMT, S_IFLNK)
        XCTAssertEqual(Files.names(in: directory.file("data")), ["store"])
        XCTAssertEqual(try open().claim(.loginState, key: "kept", expiresAt: clock.now + 60), .alreadyUsed)
    }
}
