@testable import SidecarProxy

/// The state machine's events and actions as values, for tables: each event is one method of
/// the machine and each method has its own action type; `replay` calls the method an event
/// names and reports its action in one flat list the rows compare against.
extension ConnectionStateMachine {
    enum Event: Equatable {
        case proxyHeaderRead, handshakeFinished, inputIdle, headIncomplete
        case headParsed(keepAlive: Bool, hasBody: Bool, draining: Bool)
        case refused, requestBodyComplete, answerWithoutReadingBody, mustClose, finalHeadWritten
        case inputEnded(clean: Bool)
        /// With the rows' connect timeout, 5 s.
        case upstreamConnecting
        case upstreamWaiting(ms: Int64)
        case upstreamBytes
        case upstreamFailed(reused: Bool, idempotent: Bool, reset: Bool, bodyKept: Bool)
        case upstreamSilent(responseStarted: Bool)
        case localBodyStarted, localAnswerPending, localAnswered, tunnelStarted
        case exchangeFinished(draining: Bool, drainGraceOver: Bool)
        case drain
        case closeRequested(outputPending: Bool)
        case outputDrained, deadlineFired, closed
    }

    enum Action: Equatable {
        case none
        case arm(Deadline, ms: Int64)
        case cancelDeadline, stopReading, end, startRefusal, retryUpstream, failUpstream, readNextHead, beginClosing
        case awaitOutput(ms: Int64)
        case lingerClose(ms: Int64)
        case respondLocally, close, refuseTimedOutHead, refuseProxyHeader, answerLocalTimeout, refuseTimedOutLocalBody
        case connectTimedOut, checkUpstream, abortExchange, upstreamTimedOut, requestTimedOut
    }

    mutating func replay(_ event: Event) -> Action {
        switch event {
        case .proxyHeaderRead: return Self.flat(proxyHeaderRead())
        case .handshakeFinished: return Self.flat(handshakeFinished())
        case .inputIdle: return Self.flat(inputIdle())
        case .headIncomplete: return Self.flat(headIncomplete())
        case .headParsed(let keepAlive, let hasBody, let draining):
            headParsed(keepAlive: keepAlive, hasBody: hasBody, draining: draining)
            return .none
        case .refused:
            switch refused() {
            case .startRefusal: return .startRefusal
            case .answerInExchange: return .none
            }
        case .requestBodyComplete:
            requestBodyComplete()
            return .none
        case .answerWithoutReadingBody:
            answerWithoutReadingBody()
            return .none
        case .mustClose:
            mustClose()
            return .none
        case .finalHeadWritten:
            finalHeadWritten()
            return .none
        case .inputEnded(let clean):
            switch inputEnded(clean: clean) {
            case .end: return .end
            case .stopReading: return .stopReading
            }
        case .upstreamConnecting: return Self.flat(upstreamConnecting(timeoutMs: 5_000))
        case .upstreamWaiting(let ms): return Self.flat(upstreamWaiting(ms: ms))
        case .upstreamBytes:
            upstreamBytes()
            return .none
        case .upstreamFailed(let reused, let idempotent, let reset, let bodyKept):
            switch upstreamFailed(reused: reused, idempotent: idempotent, reset: reset, bodyKept: bodyKept) {
            case .retry: return .retryUpstream
            case .fail: return .failUpstream
            case .ignore: return .none
            }
        case .upstreamSilent(let responseStarted):
            switch upstreamSilent(responseStarted: responseStarted) {
            case .close: return .close
            case .abortExchange: return .abortExchange
            case .upstreamTimedOut: return .upstreamTimedOut
            case .requestTimedOut: return .requestTimedOut
            }
        case .localBodyStarted: return Self.flat(localBodyStarted())
        case .localAnswerPending: return Self.flat(localAnswerPending())
        case .localAnswered:
            switch localAnswered() {
            case .respond: return .respondLocally
            case .drop: return .none
            }
        case .tunnelStarted: return Self.flat(tunnelStarted())
        case .exchangeFinished(let draining, let drainGraceOver):
            switch exchangeFinished(draining: draining, drainGraceOver: drainGraceOver) {
            case .readNextHead: return .readNextHead
            case .beginClosing: return .beginClosing
            }
        case .drain:
            drain()
            return .none
        case .closeRequested(let outputPending): return Self.flat(closeRequested(outputPending: outputPending))
        case .outputDrained: return Self.flat(outputDrained())
        case .deadlineFired:
            switch deadlineFired() {
            case .none: return .none
            case .close: return .close
            case .refuseProxyHeader: return .refuseProxyHeader
            case .refuseTimedOutHead: return .refuseTimedOutHead
            case .answerLocalTimeout: return .answerLocalTimeout
            case .refuseTimedOutLocalBody: return .refuseTimedOutLocalBody
            case .connectTimedOut: return .connectTimedOut
            case .checkUpstream: return .checkUpstream
            }
        case .closed: return Self.flat(closed())
        }
    }

    static func flat(_ action: DeadlineAction) -> Action {
        switch action {
        case .none: return .none
        case .arm(let deadline, let ms): return .arm(deadline, ms: ms)
        case .cancel: return .cancelDeadline
        }
    }

    static func flat(_ action: ClosingAction) -> Action {
        switch action {
        case .none: return .none
        case .awaitOutput(let ms): return .awaitOutput(ms: ms)
        case .lingerClose(let ms): return .lingerClose(ms: ms)
        }
    }
}
