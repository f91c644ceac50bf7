import XCTest

@testable import SidecarProxy

/// The HTTP/2 connection's own decisions, without sockets: draining, the end of the session
/// and its linger, the deadline, and sending without re-entering the session.
final class HTTP2ConnectionStateMachineTests: XCTestCase {
    typealias Machine = HTTP2ConnectionStateMachine
    static let timeouts = Machine.Timeouts(idleMs: 60_000, headerMs: 10_000)

    private func machine(_ setup: (inout Machine) -> Void = { _ in }) -> Machine {
        var m = Machine(timeouts: Self.timeouts)
        setup(&m)
        return m
    }

    func testDrainSendsGoAwayOnceAndStopsTakingStreams() {
        var m = machine()
        XCTAssertTrue(m.takesStreams)
        XCTAssertEqual(m.drain(), .sendGoAway)
        XCTAssertEqual(m.state, .serving(draining: true))
        XCTAssertFalse(m.takesStreams)
        XCTAssertEqual(m.drain(), .none)
    }

    func testTheSessionsEndFlushesThenLingersThenCloses() {
        struct Row {
            let name: String
            let before: (inout Machine) -> Void
            let outputPending: Bool
            let action: Machine.FinishAction
            let state: Machine.State
        }
        let rows = [
            Row(name: "nothing queued: linger at once", before: { _ in }, outputPending: false,
                action: .shutdownAndLinger, state: .lingering),
            Row(name: "frames queued: wait for them", before: { _ in }, outputPending: true,
                action: .awaitFlush, state: .flushingLastFrames),
            Row(name: "still queued: keep waiting", before: { _ = $0.sessionFinished(outputPending: true) },
                outputPending: true, action: .none, state: .flushingLastFrames),
            Row(name: "flushed: linger", before: { _ = $0.sessionFinished(outputPending: true) },
                outputPending: false, action: .shutdownAndLinger, state: .lingering),
            Row(name: "draining ends the same way", before: { _ = $0.drain() }, outputPending: false,
                action: .shutdownAndLinger, state: .lingering),
            Row(name: "lingering: nothing more", before: { _ = $0.sessionFinished(outputPending: false) },
                outputPending: false, action: .none, state: .lingering),
            Row(name: "closed: nothing", before: { _ = $0.closed() }, outputPending: true, action: .none, state: .closed),
        ]
        for row in rows {
            var m = machine(row.before)
            XCTAssertEqual(m.sessionFinished(outputPending: row.outputPending), row.action, row.name)
            XCTAssertEqual(m.state, row.state, row.name)
        }
        var lingering = machine { _ = $0.sessionFinished(outputPending: false) }
        XCTAssertTrue(lingering.discardsInput)
        XCTAssertFalse(lingering.takesStreams)
        XCTAssertEqual(lingering.deadlineFired(headInProgress: false, streamsOpen: true), .close)
        XCTAssertTrue(lingering.closed())
        XCTAssertFalse(lingering.closed(), "closed once")
    }

    func testTheDeadline() {
        let serving = machine()
        XCTAssertEqual(serving.deadline(nowMs: 500, headBeganMs: 100, streamsOpen: true, lastActiveMs: 0, answered: true),
                       .at(ms: 10_100), "a head's total deadline from its first byte")
        XCTAssertEqual(serving.deadline(nowMs: 500, headBeganMs: 0, streamsOpen: false, lastActiveMs: 200, answered: true),
                       .at(ms: 60_200), "idle after an answer")
        XCTAssertEqual(serving.deadline(nowMs: 500, headBeganMs: 0, streamsOpen: false, lastActiveMs: 200, answered: false),
                       .at(ms: 10_200), "nothing of note answered yet: the header deadline")
        XCTAssertEqual(serving.deadline(nowMs: 500, headBeganMs: 0, streamsOpen: true, lastActiveMs: 200, answered: true),
                       .cancel, "streams open: their own deadlines run")
        let flushing = machine { _ = $0.sessionFinished(outputPending: true) }
        XCTAssertEqual(flushing.deadline(nowMs: 500, headBeganMs: 100, streamsOpen: true, lastActiveMs: 0, answered: true),
                       .at(ms: 2_500), "the linger bounds the last frames")
        XCTAssertEqual(serving.deadlineFired(headInProgress: true, streamsOpen: true), .goAwayAndTerminate)
        XCTAssertEqual(serving.deadlineFired(headInProgress: false, streamsOpen: false), .goAwayAndTerminate)
        XCTAssertEqual(serving.deadlineFired(headInProgress: false, streamsOpen: true), .none)
        XCTAssertEqual(flushing.deadlineFired(headInProgress: false, streamsOpen: false), .close)
    }

    func testASendAskedForInsideASessionCallRunsWhenItReturns() {
        var m = machine()
        XCTAssertEqual(m.sendRequested(), .sendNow)
        m.enterSession()
        XCTAssertEqual(m.sendRequested(), .afterSessionCall)
        XCTAssertEqual(m.sending, .inSession(sendAgain: true))
        XCTAssertTrue(m.sendReturned(), "send again")
        XCTAssertEqual(m.sending, .idle)
        m.enterSession()
        XCTAssertFalse(m.sendReturned(), "nothing asked meanwhile")
        m.enterSession()
        XCTAssertEqual(m.sendRequested(), .afterSessionCall)
        m.receiveReturned()
        XCTAssertEqual(m.sending, .idle, "the send after a receive covers it")
        _ = m.closed()
        XCTAssertEqual(m.sendRequested(), .none)
    }

    func testANextTurnSendIsQueuedOnceAndNotRunAfterTheClose() {
        var m = machine()
        XCTAssertTrue(m.sendWanted())
        XCTAssertFalse(m.sendWanted(), "already queued")
        XCTAssertTrue(m.scheduledSendRuns())
        XCTAssertTrue(m.sendWanted())
        _ = m.closed()
        XCTAssertFalse(m.scheduledSendRuns())
        XCTAssertFalse(m.sendWanted())
    }
}
