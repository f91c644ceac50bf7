import XCTest

@testable import SidecarStore

final class ClaimTests: XCTestCase {
    let clock = ManualClock()

    func testASecondClaimIsAlreadyUsedUntilTheKeyExpires() throws {
        try eachStore(clock: clock) { store in
            let key = Array("state-1".utf8)
            XCTAssertEqual(store.claim(.loginState, key: key, expiresAt: clock.now + 600), .claimed)
            XCTAssertEqual(store.claim(.loginState, key: key, expiresAt: clock.now + 600), .alreadyUsed)
            clock.advance(599)
            XCTAssertEqual(store.claim(.loginState, key: key, expiresAt: clock.now + 600), .alreadyUsed)
            clock.advance(1)
            XCTAssertEqual(store.claim(.loginState, key: key, expiresAt: clock.now + 600), .claimed)
        }
    }

    func testNamespacesAreIndependent() throws {
        try eachStore(clock: clock) { store in
            let key = Array("same-bytes".utf8)
            for namespace in [ClaimNamespace.loginState, .nativeNonce, .notificationJTI] {
                XCTAssertEqual(store.claim(namespace, key: key, expiresAt: clock.now + 60), .claimed, "\(namespace)")
            }
            XCTAssertEqual(store.claim(.nativeNonce, key: key, expiresAt: clock.now + 60), .alreadyUsed)
        }
    }

    func testLongKeysAreHashedAndStillDistinct() throws {
        try eachStore(clock: clock) { store in
            let long = Array(String(repeating: "x", count: 500).utf8)
            XCTAssertEqual(store.claim(.notificationJTI, key: long, expiresAt: clock.now + 60), .claimed)
            XCTAssertEqual(store.claim(.notificationJTI, key: long + [0x79], expiresAt: clock.now + 60), .claimed)
            XCTAssertEqual(store.claim(.notificationJTI, key: long, expiresAt: clock.now + 60), .alreadyUsed)
            XCTAssertEqual(store.metrics.singleUseKeys, 2)
        }
    }

    func testAnAlreadyExpiredKeyIsNotRemembered() throws {
        try eachStore(clock: clock) { store in
            XCTAssertEqual(store.claim(.loginState, key: [1, 2, 3], expiresAt: clock.now), .claimed)
            XCTAssertEqual(store.metrics.singleUseKeys, 0)
        }
    }

    /// Off any running loop there is no later turn to wait for (a tool, a test).
    func testOffALoopTheCompletionFormAnswersBeforeReturning() throws {
        try eachStore(clock: clock) { store in
            var answers: [ClaimResult] = []
            let backend: any StoreBackend = store
            backend.claim(.nativeNonce, key: "nonce", expiresAt: clock.now + 60) { answers.append($0) }
            backend.claim(.nativeNonce, key: "nonce", expiresAt: clock.now + 60) { answers.append($0) }
            XCTAssertEqual(answers, [.claimed, .alreadyUsed])
        }
    }

    /// The memory store under a flood: memory stays bounded, claims stay O(1) amortized,
    /// and the newest keys still count.
    func testAFloodOfTheMemoryStoreIsBounded() {
        var limits = StoreLimits()
        limits.memoryClaimCapacity = 1_000
        let store = MemoryStore(limits: limits, clock: clock.storeClock)
        for i in 0..<20_000 {
            XCTAssertEqual(store.claim(.loginState, key: Array("s\(i)".utf8), expiresAt: clock.now + 600 + Int64(i)), .claimed)
        }
        XCTAssertLessThanOrEqual(store.metrics.singleUseKeys, 1_000)
        XCTAssertGreaterThan(store.metrics.claimOverflows, 0)
        XCTAssertEqual(store.claim(.loginState, key: Array("s19999".utf8), expiresAt: clock.now + 600), .alreadyUsed)

        let big = MemoryStore(clock: clock.storeClock)
        for i in 0..<150_000 { _ = big.claim(.loginState, key: Array("s\(i)".utf8), expiresAt: clock.now + 600) }
        XCTAssertLessThanOrEqual(big.metrics.singleUseKeys, 100_000)
    }


    func testExpiredKeysAreSweptFromMemory() throws {
        try eachStore(clock: clock) { store in
            for i in 0..<100 { _ = store.claim(.loginState, key: [UInt8(i)], expiresAt: clock.now + 5) }
            XCTAssertEqual(store.metrics.singleUseKeys, 100)
            clock.advance(SingleUseKeyTable.sweepIntervalSeconds + 5)
            XCTAssertEqual(store.claim(.loginState, key: [255], expiresAt: clock.now + 5), .claimed)
            XCTAssertEqual(store.metrics.singleUseKeys, 1)
        }
    }
}
