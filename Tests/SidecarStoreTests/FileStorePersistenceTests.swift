import Glibc
import XCTest

@testable import SidecarStore

final class FileStorePersistenceTests: FileStoreTestCase {
    func testANewStoreFileHasTheHeaderAndMode0600() throws {
        let store = try open()
        XCTAssertEqual(Files.read(path), Array("SIWA-SIDECAR-STORE/1\n".utf8))
        XCTAssertEqual(Files.mode(path), 0o600)
        XCTAssertEqual(store.createdFile, path)
        XCTAssertEqual(store.openingNotes, [], "a first start is no cause for a warning")
        XCTAssertEqual(store.health.state, .ready)
        XCTAssertTrue(store.health.durable)
        XCTAssertEqual(store.health.location, "file:\(path)")
        XCTAssertEqual(Files.names(in: directory.path), ["store"])  // no temporary file left
    }

    func testEveryKindSurvivesCloseAndReopen() throws {
        let store = try open()
        try store.revokeSession(id: sessionID(1), expiresAt: clock.now + 3600)
        try store.revokeSubject("sub.a", issuedAtOrBeforeMs: 1_700_000_000_500, keepUntil: clock.now + 3600)
        XCTAssertEqual(store.claim(.loginState, key: "state", expiresAt: clock.now + 600), .claimed)
        XCTAssertEqual(store.claim(.notificationJTI, key: Array(repeating: 7, count: 40), expiresAt: clock.now + 600), .claimed)
        let kept = try store.enqueueForward(payload: Array(#"{"event":1}"#.utf8))
        let acked = try store.enqueueForward(payload: Array(#"{"event":2}"#.utf8))
        try store.recordForwardAttempt(kept)
        try store.ackForward(acked)
        XCTAssertEqual(store.metrics.recordsAppended, 8)
        store.close()

        clock.advance(10)
        let reopened = try open()
        XCTAssertEqual(reopened.openingNotes, [])
        XCTAssertTrue(reopened.isRevoked(sessionID(1)))
        XCTAssertFalse(reopened.isRevoked(sessionID(2)))
        XCTAssertTrue(reopened.isRevoked(sessionID(2), subject: "sub.a", issuedAtMs: 1_700_000_000_500))
        XCTAssertFalse(reopened.isRevoked(sessionID(2), subject: "sub.a", issuedAtMs: 1_700_000_000_501))
        XCTAssertEqual(reopened.claim(.loginState, key: "state", expiresAt: clock.now + 600), .alreadyUsed)
        XCTAssertEqual(reopened.claim(.notificationJTI, key: Array(repeating: 7, count: 40), expiresAt: clock.now + 600), .alreadyUsed)
        XCTAssertEqual(reopened.claim(.nativeNonce, key: "state", expiresAt: clock.now + 600), .claimed)
        let pending = try reopened.pendingForwards()
        XCTAssertEqual(pending.map(\.id), [kept])
        XCTAssertEqual(pending.first?.payload, Array(#"{"event":1}"#.utf8))
        XCTAssertEqual(pending.first?.attempts, 1)
        XCTAssertEqual(pending.first?.lastAttemptAt, clock.now - 10)
        // Ids continue after the highest ever given, acknowledged ones included.
        XCTAssertGreaterThan(try reopened.enqueueForward(payload: [1]), acked)
    }

    func testWhatExpiredWhileClosedIsGoneAfterReopen() throws {
        let store = try open()
        try store.revokeSession(id: sessionID(1), expiresAt: clock.now + 100)
        try store.revokeSession(id: sessionID(2), expiresAt: clock.now + 1000)
        _ = store.claim(.loginState, key: "short", expiresAt: clock.now + 100)
        store.close()
        clock.advance(500)
        let reopened = try open()
        XCTAssertFalse(reopened.isRevoked(sessionID(1)))
        XCTAssertTrue(reopened.isRevoked(sessionID(2)))
        XCTAssertEqual(reopened.claim(.loginState, key: "short", expiresAt: clock.now + 100), .claimed)
    }

    func testChangesAfterCloseFail() throws {
        let store = try open()
        store.close()
        XCTAssertThrowsError(try store.revokeSession(id: sessionID(1), expiresAt: clock.now + 10)) {
            XCTAssertEqual($0 as? StoreError, .closed)
        }
        guard case .unavailable = store.claim(.loginState, key: "x", expiresAt: clock.now + 10) else { return XCTFail() }
        XCTAssertFalse(store.health.isReady)
    }

    func testOpenStoreFactoryOpensEachBackend() throws {
        let memory = try openStore(.memory, clock: clock.storeClock)
        XCTAssertEqual(memory.health.backend, "memory")
        XCTAssertFalse(memory.health.durable)
        let file = try openStore(.file(path: path), clock: clock.storeClock)
        XCTAssertEqual(file.health.backend, "file")
        XCTAssertEqual(StoreSpec.file(path: path).description, "file:\(path)")
        file.close()
    }

    func testSyncMetricsAreCounted() throws {
        let store = try open()
        let before = store.metrics
        for i in 0..<5 { _ = store.claim(.loginState, key: [UInt8(i)], expiresAt: clock.now + 60) }
        let after = store.metrics
        XCTAssertEqual(after.syncs - before.syncs, 5)
        XCTAssertGreaterThanOrEqual(after.syncMicrosecondsTotal, before.syncMicrosecondsTotal)
        XCTAssertGreaterThanOrEqual(after.syncMicrosecondsMax, before.syncMicrosecondsMax)
        XCTAssertEqual(after.fileBytes, UInt64(Files.size(path)))
        XCTAssertEqual(after.recordsAppended, 5)
    }
}
