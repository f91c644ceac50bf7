import Glibc
import SidecarEvent

/// What `ConnectionStateMachine` decides, done on the sockets and the timer.
extension ClientConnection {
    /// Carries out what the state machine decided. The decisions that need the event's own
    /// context (retry or fail, a local answer, a refusal's fresh exchange) are taken where
    /// the event is reported. Inlined: at each call site only the actions its event can
    /// produce remain, so the common ones cost no call.
    @inline(__always)
    func perform(_ action: ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .arm(_, let ms):
            startDeadline(ms)
        case .cancelDeadline:
            deadline.cancel()
            timerAtMs = .max
        case .stopReading:
            stream.pauseReading()
        case .end:
            clientEnded()
        case .readNextHead:
            readHeads()
        case .beginClosing:
            beginClosing()
        case .awaitOutput(let ms):
            startDeadline(ms)
            updateClientReading()
        case .lingerClose(let ms):
            // An HTTP/2 stream has no socket to linger on: its connection ends the stream.
            if isHTTP2 {
                close()
                return
            }
            // Half-closes after the last response byte and discards input briefly, so the
            // client reads the response instead of a reset caused by unread request bytes.
            stream.shutdownWrite()
            stream.input.drain(stream.pendingInput)
            startDeadline(ms)
            stream.resumeReading()
        case .close:
            close()
        case .refuseTimedOutHead:
            refuse(408)
        case .refuseProxyHeader:
            refuseProxyHeader(.timeout, "not complete within limits.header_timeout")
        case .answerLocalTimeout:
            respond(.plain(504))
        case .refuseTimedOutLocalBody:
            exchange.clearLocal()
            refuse(408)
        case .connectTimedOut:
            if upstreamWait != .none {
                upstreamWaitOver()
                return
            }
            metrics.recordUpstreamConnectFailure(exchange.upstreamIndex)
            worker.logUpstreamFailure("connect()", errno: ETIMEDOUT, upstream: exchange.upstream?.pool)
            failUpstream(504, upstreamFault: true)
        case .checkUpstream:
            checkUpstream()
        case .abortExchange:
            abort(.upstreamTimeout)
        case .upstreamTimedOut:
            worker.logUpstreamFailure("response", errno: ETIMEDOUT, upstream: exchange.upstream?.pool)
            failUpstream(504, upstreamFault: true)
        case .requestTimedOut:
            failUpstream(408)
        case .startRefusal, .retryUpstream, .failUpstream, .respondLocally:
            preconditionFailure("\(action) is taken where its event is reported")
        }
    }
}
