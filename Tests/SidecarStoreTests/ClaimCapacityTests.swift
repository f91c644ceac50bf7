import XCTest

@testable import SidecarStore

/// Each kind of single-use key has its own capacity: a flood of login states — two
/// unauthenticated requests each — never evicts or blocks nonces or notification ids, and
/// nothing used is ever forgotten in a way that lets it be replayed.
final class ClaimCapacityTests: XCTestCase {
    let clock = ManualClock()

    private func limits(_ capacity: Int) -> StoreLimits {
        var limits = StoreLimits()
        limits.memoryClaimCapacity = capacity
        limits.fileClaimCapacity = capacity
        return limits
    }

    private func isUnavailable(_ result: ClaimResult, mentioning word: String, file: StaticString = #filePath, line: UInt = #line) {
        guard case .unavailable(let reason) = result else {
            return XCTFail("expected a refusal, got \(result)", file: file, line: line)
        }
        XCTAssertTrue(reason.contains(word), reason, file: file, line: line)
    }

    func testAFloodOfLoginStatesNeverEvictsOrBlocksTheOtherKinds() throws {
        try eachStore(clock: clock, limits: limits(100)) { store in
            XCTAssertEqual(store.claim(.nativeNonce, key: "spent-nonce", expiresAt: clock.now + 600), .claimed)
            XCTAssertEqual(store.claim(.notificationJTI, key: "spent-jti", expiresAt: clock.now + 600), .claimed)
            for i in 0..<1_000 {
                clock.advance(i % 10 == 0 ? 1 : 0)
                _ = store.claim(.loginState, key: "state-\(i)", expiresAt: clock.now + 600)
            }
            XCTAssertEqual(store.claim(.nativeNonce, key: "spent-nonce", expiresAt: clock.now + 600), .alreadyUsed)
            XCTAssertEqual(store.claim(.notificationJTI, key: "spent-jti", expiresAt: clock.now + 600), .alreadyUsed)
            XCTAssertEqual(store.claim(.nativeNonce, key: "new-nonce", expiresAt: clock.now + 600), .claimed)
            XCTAssertEqual(store.claim(.notificationJTI, key: "new-jti", expiresAt: clock.now + 600), .claimed)
            XCTAssertLessThanOrEqual(store.metrics.singleUseKeysByKind[ClaimKind.loginState.rawValue], 100)
            XCTAssertEqual(store.metrics.singleUseKeysByKind[ClaimKind.nativeNonce.rawValue], 2)
            XCTAssertEqual(store.metrics.claimOverflowsByKind[ClaimKind.nativeNonce.rawValue], 0)
            XCTAssertGreaterThan(store.metrics.claimOverflowsByKind[ClaimKind.loginState.rawValue], 0)
        }
    }

    /// Login states: the oldest quarter is forgotten for room, and every state no newer than
    /// them is refused from then on — a forgotten state can never be replayed.
    func testForgottenLoginStatesAreRefusedNeverClaimedAgain() throws {
        try eachStore(clock: clock, limits: limits(8)) { store in
            let start = clock.now
            for i in 0..<8 {
                XCTAssertEqual(store.claim(.loginState, key: "s\(i)", expiresAt: start + 600 + Int64(i)), .claimed)
            }
            XCTAssertEqual(store.claim(.loginState, key: "s8", expiresAt: start + 608), .claimed)  // s0, s1 forgotten
            XCTAssertEqual(store.metrics.singleUseKeysByKind[ClaimKind.loginState.rawValue], 7)
            isUnavailable(store.claim(.loginState, key: "s0", expiresAt: start + 600), mentioning: "login_state")
            isUnavailable(store.claim(.loginState, key: "s1", expiresAt: start + 601), mentioning: "forgotten")
            // Never claimed, but as old as the forgotten ones: it cannot be told from them.
            isUnavailable(store.claim(.loginState, key: "old", expiresAt: start + 601), mentioning: "forgotten")
            XCTAssertEqual(store.claim(.loginState, key: "s2", expiresAt: start + 602), .alreadyUsed)
            XCTAssertEqual(store.claim(.loginState, key: "s8", expiresAt: start + 608), .alreadyUsed)
            XCTAssertEqual(store.claim(.loginState, key: "new", expiresAt: start + 609), .claimed)
        }
    }

    /// Nonces and notification ids are never forgotten early: when their kind is full, new
    /// ones are refused (503 upstream) until keys expire, while other kinds go on.
    func testAFullKindOtherThanLoginStatesRefusesUntilItsKeysExpire() throws {
        for namespace in [ClaimNamespace.nativeNonce, .notificationJTI] {
            try eachStore(clock: clock, limits: limits(4)) { store in
                for i in 0..<4 { XCTAssertEqual(store.claim(namespace, key: "k\(i)", expiresAt: clock.now + 10), .claimed) }
                isUnavailable(store.claim(namespace, key: "k4", expiresAt: clock.now + 10), mentioning: "\(namespace) full")
                for i in 0..<4 { XCTAssertEqual(store.claim(namespace, key: "k\(i)", expiresAt: clock.now + 10), .alreadyUsed) }
                XCTAssertEqual(store.claim(.loginState, key: "k4", expiresAt: clock.now + 10), .claimed)
                XCTAssertEqual(store.metrics.claimOverflowsByKind[ClaimKind(namespace).rawValue], 1)
                clock.advance(10)
                XCTAssertEqual(store.claim(namespace, key: "k4", expiresAt: clock.now + 10), .claimed)
            }
        }
    }

    /// The file store writes the horizon before forgetting: a forgotten login state stays
    /// refused after a restart and after compaction, until it would have expired anyway.
    func testTheFileStoreKeepsTheHorizonAcrossRestartsAndCompaction() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("store")
        let start = clock.now
        do {
            let store = try FileStore(path: path, limits: limits(8), clock: clock.storeClock)
            for i in 0..<20 { _ = store.claim(.loginState, key: "s\(i)", expiresAt: start + 600 + Int64(i)) }
            store.close()
        }
        let reopened = try FileStore(path: path, limits: limits(8), clock: clock.storeClock)
        isUnavailable(reopened.claim(.loginState, key: "s0", expiresAt: start + 600), mentioning: "forgotten")
        XCTAssertEqual(reopened.claim(.loginState, key: "s19", expiresAt: start + 619), .alreadyUsed)
        try reopened.compact()
        reopened.close()
        let compacted = try FileStore(path: path, limits: limits(8), clock: clock.storeClock)
        defer { compacted.close() }
        isUnavailable(compacted.claim(.loginState, key: "s0", expiresAt: start + 600), mentioning: "forgotten")
        XCTAssertEqual(compacted.claim(.loginState, key: "s19", expiresAt: start + 619), .alreadyUsed)
        clock.advance(700)
        XCTAssertEqual(compacted.claim(.loginState, key: "s0", expiresAt: clock.now + 600), .claimed)
    }

    func testTheDefaultCapacityIsPerKind() throws {
        let store = MemoryStore(clock: clock.storeClock)
        for i in 0..<100_000 { _ = store.claim(.loginState, key: "s\(i)", expiresAt: clock.now + 600) }
        XCTAssertEqual(store.claim(.nativeNonce, key: "nonce", expiresAt: clock.now + 600), .claimed)
        for i in 0..<1_000 { _ = store.claim(.loginState, key: "t\(i)", expiresAt: clock.now + 601) }
        XCTAssertEqual(store.claim(.nativeNonce, key: "nonce", expiresAt: clock.now + 600), .alreadyUsed)
        XCTAssertLessThanOrEqual(store.metrics.singleUseKeys, 100_001)
    }
}
