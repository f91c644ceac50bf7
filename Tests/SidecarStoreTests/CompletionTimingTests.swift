import SidecarEvent
import XCTest

@testable import SidecarStore

/// `StoreBackend`'s promise to a caller on an event loop: a completion never runs before the
/// call that was given it returned, so a caller may finish its own bookkeeping after the call.
final class CompletionTimingTests: XCTestCase {
    let clock = ManualClock()

    func testEveryChangeAnswersOnALaterTurn() throws {
        try eachStore(clock: clock) { store in
            let backend: any StoreBackend = store
            var log: [String] = []
            try onALoopTurn { done in
                func call(_ name: String, _ change: (@escaping () -> Void) -> Void) {
                    change { log.append("answered \(name)") }
                    log.append("returned \(name)")
                }
                call("revokeSession") { answered in
                    let id = [UInt8](repeating: 7, count: 16)
                    backend.revokeSession(id: id, expiresAt: self.clock.now + 60) { _ in answered() }
                }
                call("revokeSubject") { answered in
                    backend.revokeSubject("user", issuedAtOrBeforeMs: self.clock.now * 1000, keepUntil: self.clock.now + 60) { _ in
                        answered()
                    }
                }
                call("claim") { answered in
                    backend.claim(.loginState, key: "state", expiresAt: self.clock.now + 60) { _ in answered() }
                }
                call("enqueueForward") { answered in backend.enqueueForward(payload: [1]) { _ in answered() } }
                call("ackForward") { answered in backend.ackForward(ForwardID(rawValue: 1)) { _ in answered() } }
                call("recordForwardAttempt") { answered in
                    backend.recordForwardAttempt(ForwardID(rawValue: 1)) { _ in answered() }
                }
                call("pendingForwards") { answered in
                    backend.pendingForwards { _ in
                        answered()
                        done()
                    }
                }
            }
            let names = ["revokeSession", "revokeSubject", "claim", "enqueueForward", "ackForward",
                         "recordForwardAttempt", "pendingForwards"]
            XCTAssertEqual(log, names.map { "returned \($0)" } + names.map { "answered \($0)" })
        }
    }

    func testAnswersKeepTheirOrder() throws {
        try eachStore(clock: clock) { store in
            let backend: any StoreBackend = store
            var answers: [ClaimResult] = []
            var answeredBeforeReturning = false
            try onALoopTurn { done in
                backend.claim(.nativeNonce, key: "nonce", expiresAt: self.clock.now + 60) { answers.append($0) }
                backend.claim(.nativeNonce, key: "nonce", expiresAt: self.clock.now + 60) {
                    answers.append($0)
                    done()
                }
                answeredBeforeReturning = !answers.isEmpty
            }
            XCTAssertFalse(answeredBeforeReturning)
            XCTAssertEqual(answers, [.claimed, .alreadyUsed])
        }
    }

    /// Runs `body` from a callback of a running loop, until it calls `done`.
    private func onALoopTurn(_ body: @escaping (_ done: @escaping () -> Void) -> Void) throws {
        let loop = try EventLoop()
        let start = Timer(loop: loop) { body { loop.stop() } }
        let backstop = Timer(loop: loop) { loop.stop() }
        start.schedule(afterMilliseconds: 0)
        backstop.schedule(afterMilliseconds: 5_000)
        loop.run()
        backstop.cancel()
    }
}
