import Foundation
import Synchronization
import XCTest

@testable import SidecarStore

final class RevocationTests: XCTestCase {
    let clock = ManualClock()

    func testASessionIsRevokedByItsIDUntilItExpires() throws {
        try eachStore(clock: clock) { store in
            XCTAssertFalse(store.isRevoked(sessionID(1)))
            try store.revokeSession(id: sessionID(1), expiresAt: clock.now + 3600)
            XCTAssertTrue(store.isRevoked(sessionID(1)))
            XCTAssertFalse(store.isRevoked(sessionID(2)))
        }
    }

    func testARevocationForAnAlreadyExpiredSessionIsNotKept() throws {
        try eachStore(clock: clock) { store in
            try store.revokeSession(id: sessionID(3), expiresAt: clock.now)
            XCTAssertFalse(store.isRevoked(sessionID(3)))
            XCTAssertEqual(store.metrics.revokedSessions, 0)
        }
    }

    /// Apple's `event_time` is in milliseconds: a session issued exactly at the cutoff is
    /// revoked, one issued a millisecond later is not.
    func testASubjectCutoffIsInclusiveToTheMillisecond() throws {
        let cutoff: Int64 = 1_700_000_000_123
        try eachStore(clock: clock) { store in
            try store.revokeSubject("sub.001", issuedAtOrBeforeMs: cutoff, keepUntil: clock.now + 86_400)
            XCTAssertTrue(store.isRevoked(sessionID(1), subject: "sub.001", issuedAtMs: cutoff - 1))
            XCTAssertTrue(store.isRevoked(sessionID(1), subject: "sub.001", issuedAtMs: cutoff))
            XCTAssertFalse(store.isRevoked(sessionID(1), subject: "sub.001", issuedAtMs: cutoff + 1))
            XCTAssertFalse(store.isRevoked(sessionID(1), subject: "sub.002", issuedAtMs: cutoff - 1))
        }
    }

    func testRevokingASubjectAgainKeepsTheLaterCutoffAndLongerLife() throws {
        try eachStore(clock: clock) { store in
            try store.revokeSubject("sub", issuedAtOrBeforeMs: 5_000, keepUntil: clock.now + 100)
            try store.revokeSubject("sub", issuedAtOrBeforeMs: 2_000, keepUntil: clock.now + 50)
            XCTAssertTrue(store.isRevoked(sessionID(0), subject: "sub", issuedAtMs: 5_000))
            try store.revokeSubject("sub", issuedAtOrBeforeMs: 9_000, keepUntil: clock.now + 10)
            XCTAssertTrue(store.isRevoked(sessionID(0), subject: "sub", issuedAtMs: 9_000))
            XCTAssertFalse(store.isRevoked(sessionID(0), subject: "sub", issuedAtMs: 9_001))
            let entry = store.revocations.snapshot().subjects["sub"]
            XCTAssertEqual(entry, SubjectRevocation(cutoffMs: 9_000, keepUntil: clock.now + 100))
        }
    }

    func testSubjectsOutOfBoundsAreRefused() throws {
        try eachStore(clock: clock) { store in
            XCTAssertThrowsError(try store.revokeSubject("", issuedAtOrBeforeMs: 1, keepUntil: clock.now + 1))
            let long = String(repeating: "s", count: 1025)
            XCTAssertThrowsError(try store.revokeSubject(long, issuedAtOrBeforeMs: 1, keepUntil: clock.now + 1))
        }
    }

    /// The view reloads only when the generation moved; with nothing revoked it answers
    /// without looking at any dictionary.
    func testAViewSeesChangesAndReloadsOnlyWhenTheGenerationMoves() throws {
        try eachStore(clock: clock) { store in
            var view = store.makeRevocationView()
            XCTAssertFalse(view.isStale)
            XCTAssertFalse(view.isRevoked(sessionID: sessionID(7), subject: "s", issuedAtMs: 0))
            let before = view.generation
            try store.revokeSession(id: sessionID(7), expiresAt: clock.now + 60)
            XCTAssertTrue(view.isStale)
            XCTAssertTrue(view.isRevoked(sessionID: sessionID(7), subject: "s", issuedAtMs: 0))
            XCTAssertGreaterThan(view.generation, before)
            XCTAssertFalse(view.isStale)
            // Borrowed-buffer form, as the request path holds the id.
            let id = sessionID(7)
            XCTAssertTrue(id.withUnsafeBytes { view.isRevoked(sessionID: $0, subject: "s", issuedAtMs: 0) })
            let generation = view.generation
            for _ in 0..<1000 { _ = view.isRevoked(sessionID: sessionID(8), subject: "s", issuedAtMs: 0) }
            XCTAssertEqual(view.generation, generation)
        }
    }

    func testIDsOfAnotherLengthAreHashedConsistently() throws {
        try eachStore(clock: clock) { store in
            let longID = Array("a-session-id-longer-than-sixteen-bytes".utf8)
            try store.revokeSession(id: longID, expiresAt: clock.now + 60)
            XCTAssertTrue(store.isRevoked(longID))
            XCTAssertFalse(store.isRevoked(Array(longID.prefix(16))))
        }
    }

    /// Views on several threads keep answering while another thread revokes; each sees
    /// every revocation made before its check started.
    func testViewsOnSeveralThreadsFollowAWriter() throws {
        let store = MemoryStore(clock: clock.storeClock)
        let expiresAt = clock.now + 60
        let total = 2_000
        let written = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let readersDone = DispatchGroup()
        // Threads of their own: readers spin until the writer is done, so they must not
        // take the pool threads the writer would need.
        for _ in 0..<3 {
            readersDone.enter()
            Thread {
                var view = store.makeRevocationView()
                while written.load(ordering: .acquiring) < total {
                    let known = written.load(ordering: .acquiring)
                    if known > 0, !view.isRevoked(sessionID: sessionID(known - 1), subject: "s", issuedAtMs: 0) {
                        failures.add(1, ordering: .relaxed)
                    }
                }
                readersDone.leave()
            }.start()
        }
        for i in 0..<total {
            try store.revokeSession(id: sessionID(i), expiresAt: expiresAt)
            written.store(i + 1, ordering: .releasing)
        }
        XCTAssertEqual(readersDone.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.load(ordering: .relaxed), 0)
        XCTAssertEqual(store.metrics.revokedSessions, UInt64(total))
    }

    /// The per-request cost, printed (not asserted: timing belongs to benchmarks).
    func testViewCheckCostIsPrinted() throws {
        let store = MemoryStore(clock: clock.storeClock)
        var view = store.makeRevocationView()
        let id = sessionID(42)
        func measure(_ label: String) {
            let rounds = 1_000_000
            var hits = 0
            let start = DispatchTime.now().uptimeNanoseconds
            id.withUnsafeBytes { buffer in
                for i in 0..<rounds where view.isRevoked(sessionID: buffer, subject: "sub", issuedAtMs: Int64(i)) { hits += 1 }
            }
            let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(rounds)
            print("revocation view, \(label): \(String(format: "%.1f", nanoseconds)) ns per check (debug build), \(hits) hits")
        }
        measure("empty set")
        for i in 0..<10_000 { try store.revokeSession(id: sessionID(1_000 + i), expiresAt: clock.now + 60) }
        try store.revokeSubject("sub", issuedAtOrBeforeMs: 10, keepUntil: clock.now + 60)
        measure("10,001 entries")
    }
}
