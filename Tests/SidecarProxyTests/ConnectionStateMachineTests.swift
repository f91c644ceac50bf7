import XCTest

@testable import SidecarProxy

/// The connection's decisions, event by event, without sockets: each row starts a plain
/// connection, replays the events that reach a state, then checks what one more event does.
final class ConnectionStateMachineTests: XCTestCase {
    typealias Machine = ConnectionStateMachine
    typealias Event = Machine.Event
    typealias Action = Machine.Action

    static let timeouts = Machine.Timeouts(idleMs: 60_000, headerMs: 10_000, upstreamMs: 30_000)

    struct Row {
        let name: String
        var handshake = false
        var proxyHeader = false
        let before: [Event]
        let event: Event
        let action: Action
        let phase: Machine.Phase
        let deadline: Machine.Deadline
        var keepAlive: Bool?
        var promisedKeepAlive: Bool?
    }

    static let get = Event.headParsed(keepAlive: true, hasBody: false, draining: false)
    static let post = Event.headParsed(keepAlive: true, hasBody: true, draining: false)
    static let finished = Event.exchangeFinished(draining: false, drainGraceOver: false)

    static let rows: [Row] = [
        // Waiting for a head.
        Row(name: "plain connection starts idle", before: [], event: .inputIdle, action: .none,
            phase: .waitingForHead, deadline: .idle),
        Row(name: "TLS handshake then idle", handshake: true, before: [], event: .handshakeFinished,
            action: .arm(.idle, ms: 60_000), phase: .waitingForHead, deadline: .idle),
        Row(name: "handshake already over: nothing", before: [], event: .handshakeFinished, action: .none,
            phase: .waitingForHead, deadline: .idle),
        Row(name: "first bytes of a head start the header deadline", before: [], event: .headIncomplete,
            action: .arm(.header, ms: 10_000), phase: .waitingForHead, deadline: .header),
        Row(name: "more of the same head keeps the total deadline", before: [.headIncomplete], event: .headIncomplete,
            action: .none, phase: .waitingForHead, deadline: .header),
        Row(name: "a head begins an exchange", before: [], event: get, action: .none, phase: .exchanging,
            deadline: .none, keepAlive: true),
        Row(name: "Connection: close or HTTP/1.0", before: [],
            event: .headParsed(keepAlive: false, hasBody: false, draining: false), action: .none,
            phase: .exchanging, deadline: .none, keepAlive: false),
        Row(name: "a head while draining", before: [],
            event: .headParsed(keepAlive: true, hasBody: false, draining: true), action: .none,
            phase: .exchanging, deadline: .none, keepAlive: false),

        // Keep-alive, close and pipelining.
        Row(name: "keep-alive: the next head", before: [get, .finalHeadWritten], event: finished,
            action: .readNextHead, phase: .waitingForHead, deadline: .none, promisedKeepAlive: true),
        Row(name: "pipelined head after the next-head action", before: [get, .finalHeadWritten, finished], event: get,
            action: .none, phase: .exchanging, deadline: .none, keepAlive: true, promisedKeepAlive: false),
        Row(name: "Connection: close ends with the exchange",
            before: [.headParsed(keepAlive: false, hasBody: false, draining: false), .finalHeadWritten], event: finished,
            action: .beginClosing, phase: .exchanging, deadline: .none, promisedKeepAlive: false),
        Row(name: "idle after the drain's grace: close",
            before: [get, .finalHeadWritten], event: .exchangeFinished(draining: true, drainGraceOver: true),
            action: .beginClosing, phase: .exchanging, deadline: .none),
        Row(name: "draining within the grace: still the next head",
            before: [get, .finalHeadWritten], event: .exchangeFinished(draining: true, drainGraceOver: false),
            action: .readNextHead, phase: .waitingForHead, deadline: .none),
        Row(name: "drain before the head promised keep-alive", before: [get], event: .drain, action: .none,
            phase: .exchanging, deadline: .none, keepAlive: false),
        Row(name: "drain after the head promised keep-alive", before: [get, .finalHeadWritten], event: .drain,
            action: .none, phase: .exchanging, deadline: .none, keepAlive: true),

        // Half-close and a client gone.
        Row(name: "half-close after a complete request: answer, then close", before: [get],
            event: .inputEnded(clean: true), action: .stopReading, phase: .exchanging, deadline: .none, keepAlive: false),
        Row(name: "half-close mid-body: the client is gone", before: [post], event: .inputEnded(clean: true),
            action: .end, phase: .exchanging, deadline: .none),
        Row(name: "reset mid-exchange", before: [get], event: .inputEnded(clean: false), action: .end,
            phase: .exchanging, deadline: .none),
        Row(name: "close while idle", before: [], event: .inputEnded(clean: true), action: .end,
            phase: .waitingForHead, deadline: .idle),

        // Bodies.
        Row(name: "body complete", before: [post], event: .requestBodyComplete, action: .none, phase: .exchanging,
            deadline: .none, keepAlive: true),
        Row(name: "answer before the body was read closes", before: [post], event: .answerWithoutReadingBody,
            action: .none, phase: .exchanging, deadline: .none, keepAlive: false),
        Row(name: "answer after the body was read keeps alive", before: [post, .requestBodyComplete],
            event: .answerWithoutReadingBody, action: .none, phase: .exchanging, deadline: .none, keepAlive: true),

        // Refusals 400/408/413/431.
        Row(name: "refusing a bad head starts its own exchange", before: [.headIncomplete], event: .refused,
            action: .startRefusal, phase: .exchanging, deadline: .header, keepAlive: false),
        Row(name: "refusing inside an exchange", before: [post], event: .refused, action: .none, phase: .exchanging,
            deadline: .none, keepAlive: false),
        Row(name: "a refusal's answer closes", before: [.refused, .finalHeadWritten], event: finished,
            action: .beginClosing, phase: .exchanging, deadline: .idle, promisedKeepAlive: false),

        // Upstream and retries.
        Row(name: "connecting", before: [get], event: .upstreamConnecting, action: .arm(.connect, ms: 5_000),
            phase: .exchanging, deadline: .connect),
        Row(name: "waiting on the upstream", before: [get], event: .upstreamWaiting(ms: 30_000),
            action: .arm(.upstream, ms: 30_000), phase: .exchanging, deadline: .upstream),
        Row(name: "reused connection reset before a byte: retry", before: [get],
            event: .upstreamFailed(reused: true, idempotent: true, reset: true, bodyKept: false),
            action: .retryUpstream, phase: .exchanging, deadline: .none),
        Row(name: "a POST with its body kept is replayed after a reset", before: [post, .requestBodyComplete],
            event: .upstreamFailed(reused: true, idempotent: false, reset: true, bodyKept: true),
            action: .retryUpstream, phase: .exchanging, deadline: .none),
        Row(name: "a POST not reset is not replayed", before: [post, .requestBodyComplete],
            event: .upstreamFailed(reused: true, idempotent: false, reset: false, bodyKept: true),
            action: .failUpstream, phase: .exchanging, deadline: .none),
        Row(name: "a fresh connection's failure is not retried", before: [get],
            event: .upstreamFailed(reused: false, idempotent: true, reset: true, bodyKept: false),
            action: .failUpstream, phase: .exchanging, deadline: .none),
        Row(name: "retried once only",
            before: [get, .upstreamFailed(reused: true, idempotent: true, reset: true, bodyKept: false)],
            event: .upstreamFailed(reused: true, idempotent: true, reset: true, bodyKept: false),
            action: .failUpstream, phase: .exchanging, deadline: .none),
        Row(name: "not after a response byte", before: [get, .upstreamBytes],
            event: .upstreamFailed(reused: true, idempotent: true, reset: true, bodyKept: false),
            action: .failUpstream, phase: .exchanging, deadline: .none),
        Row(name: "a response that must end with the close", before: [get, .mustClose, .finalHeadWritten],
            event: finished, action: .beginClosing, phase: .exchanging, deadline: .none, promisedKeepAlive: false),

        // Upstream deadline outcomes.
        Row(name: "silent upstream, request sent: 504", before: [get], event: .upstreamSilent(responseStarted: false),
            action: .upstreamTimedOut, phase: .exchanging, deadline: .none),
        Row(name: "silent upstream, body still coming: 408", before: [post],
            event: .upstreamSilent(responseStarted: false), action: .requestTimedOut, phase: .exchanging, deadline: .none),
        Row(name: "silent upstream mid-response: abort", before: [get], event: .upstreamSilent(responseStarted: true),
            action: .abortExchange, phase: .exchanging, deadline: .none),
        Row(name: "upstream deadline fires", before: [get, .upstreamWaiting(ms: 30_000)], event: .deadlineFired,
            action: .checkUpstream, phase: .exchanging, deadline: .none),
        Row(name: "connect deadline fires", before: [get, .upstreamConnecting], event: .deadlineFired,
            action: .connectTimedOut, phase: .exchanging, deadline: .none),

        // 101 tunnel.
        Row(name: "101 starts the tunnel", before: [get], event: .tunnelStarted, action: .cancelDeadline,
            phase: .tunnel, deadline: .none),
        Row(name: "tunnel ends: closing", before: [get, .tunnelStarted], event: .closeRequested(outputPending: false),
            action: .lingerClose(ms: 2_000), phase: .closing, deadline: .linger),

        // The sidecar's own endpoints.
        Row(name: "local body under the header deadline", before: [post], event: .localBodyStarted,
            action: .arm(.local, ms: 10_000), phase: .exchanging, deadline: .local),
        Row(name: "local body too slow: 408", before: [post, .localBodyStarted], event: .deadlineFired,
            action: .refuseTimedOutLocalBody, phase: .exchanging, deadline: .none),
        Row(name: "answer later: a backstop deadline", before: [get], event: .localAnswerPending,
            action: .arm(.local, ms: 31_000), phase: .exchanging, deadline: .local),
        Row(name: "the later answer arrives", before: [get, .localAnswerPending], event: .localAnswered,
            action: .respondLocally, phase: .exchanging, deadline: .local),
        Row(name: "no answer within the backstop: 504", before: [get, .localAnswerPending], event: .deadlineFired,
            action: .answerLocalTimeout, phase: .exchanging, deadline: .none),
        Row(name: "an answer after the 504 is dropped", before: [get, .localAnswerPending, .deadlineFired],
            event: .localAnswered, action: .none, phase: .exchanging, deadline: .none),
        Row(name: "an answer after the close is dropped", before: [get, .localAnswerPending, .closed],
            event: .localAnswered, action: .none, phase: .closed, deadline: .none),

        // Head and idle deadlines.
        Row(name: "header timeout: 408", before: [.headIncomplete], event: .deadlineFired, action: .refuseTimedOutHead,
            phase: .waitingForHead, deadline: .none),
        Row(name: "idle timeout: close", before: [], event: .deadlineFired, action: .close, phase: .waitingForHead,
            deadline: .none),
        Row(name: "handshake timeout: close", handshake: true, before: [], event: .deadlineFired, action: .close,
            phase: .waitingForHead, deadline: .none),

        // A PROXY protocol header first.
        Row(name: "PROXY header read: idle", proxyHeader: true, before: [], event: .proxyHeaderRead,
            action: .arm(.idle, ms: 60_000), phase: .waitingForHead, deadline: .idle),
        Row(name: "PROXY header read: the handshake keeps the accept's deadline", handshake: true, proxyHeader: true,
            before: [], event: .proxyHeaderRead, action: .none, phase: .waitingForHead, deadline: .handshake),
        Row(name: "PROXY header timeout: refused", proxyHeader: true, before: [], event: .deadlineFired,
            action: .refuseProxyHeader, phase: .waitingForHead, deadline: .none),
        Row(name: "handshake after the PROXY header times out: close", handshake: true, proxyHeader: true,
            before: [.proxyHeaderRead], event: .deadlineFired, action: .close, phase: .waitingForHead, deadline: .none),

        // Closing and linger.
        Row(name: "closing with output still queued", before: [get, .refused, .finalHeadWritten],
            event: .closeRequested(outputPending: true), action: .awaitOutput(ms: 60_000), phase: .closing,
            deadline: .linger),
        Row(name: "the output drained: linger", before: [get, .closeRequested(outputPending: true)],
            event: .outputDrained, action: .lingerClose(ms: 2_000), phase: .closing, deadline: .linger),
        Row(name: "linger over: close", before: [get, .closeRequested(outputPending: false)], event: .deadlineFired,
            action: .close, phase: .closing, deadline: .none),
        Row(name: "closed", before: [get, .closeRequested(outputPending: false)], event: .closed,
            action: .cancelDeadline, phase: .closed, deadline: .none),
        Row(name: "closed twice", before: [.closed], event: .closed, action: .none, phase: .closed, deadline: .none),
        Row(name: "no closing after closed", before: [.closed], event: .closeRequested(outputPending: false),
            action: .none, phase: .closed, deadline: .none),
    ]

    func testTheTable() {
        for row in Self.rows {
            var machine = Machine(timeouts: Self.timeouts, handshake: row.handshake, proxyHeader: row.proxyHeader)
            for event in row.before { _ = machine.replay(event) }
            let action = machine.replay(row.event)
            XCTAssertEqual(action, row.action, row.name)
            XCTAssertEqual(machine.phase, row.phase, row.name)
            XCTAssertEqual(machine.deadline, row.deadline, row.name)
            if let keepAlive = row.keepAlive { XCTAssertEqual(machine.keepAlive, keepAlive, row.name) }
            if let promised = row.promisedKeepAlive {
                XCTAssertEqual(machine.promisedKeepAlive, promised, row.name)
            }
        }
    }

    func testANewConnectionArmsItsFirstDeadline() {
        XCTAssertEqual(Machine(timeouts: Self.timeouts, handshake: false).initialDeadline, .arm(.idle, ms: 60_000))
        XCTAssertEqual(Machine(timeouts: Self.timeouts, handshake: true).initialDeadline, .arm(.handshake, ms: 10_000))
        XCTAssertEqual(Machine(timeouts: Self.timeouts, handshake: false, proxyHeader: true).initialDeadline,
                       .arm(.proxyHeader, ms: 10_000))
        XCTAssertEqual(Machine(timeouts: Self.timeouts, handshake: true, proxyHeader: true).initialDeadline,
                       .arm(.proxyHeader, ms: 10_000))
    }

    /// A keep-alive connection's whole life: two exchanges, then the client leaves.
    func testTwoExchangesOnOneConnection() {
        var machine = Machine(timeouts: Self.timeouts, handshake: false)
        let script: [(Event, Action, Machine.Phase)] = [
            (.headIncomplete, .arm(.header, ms: 10_000), .waitingForHead),
            (Self.get, .none, .exchanging),
            (.upstreamWaiting(ms: 30_000), .arm(.upstream, ms: 30_000), .exchanging),
            (.upstreamBytes, .none, .exchanging),
            (.finalHeadWritten, .none, .exchanging),
            (Self.finished, .readNextHead, .waitingForHead),
            (.inputIdle, .arm(.idle, ms: 60_000), .waitingForHead),
            (Self.post, .none, .exchanging),
            (.requestBodyComplete, .none, .exchanging),
            (.finalHeadWritten, .none, .exchanging),
            (Self.finished, .readNextHead, .waitingForHead),
            (.inputEnded(clean: true), .end, .waitingForHead),
            (.closed, .cancelDeadline, .closed),
        ]
        for (index, (event, action, phase)) in script.enumerated() {
            XCTAssertEqual(machine.replay(event), action, "step \(index)")
            XCTAssertEqual(machine.phase, phase, "step \(index)")
        }
        XCTAssertFalse(machine.retried)
    }
}
