import Glibc
import SidecarEvent

/// What `ConnectionStateMachine` decides, done on the sockets and the timer: one `perform`
/// per action type. Inlined: each call site keeps only its own type's cases, so the common
/// ones cost no call. The actions that need their event's own context (a refusal's fresh
/// exchange, a retry, a late local answer) are taken where the event is reported.
extension ClientConnection {
    @inline(__always)
    func perform(_ action: ConnectionStateMachine.DeadlineAction) {
        switch action {
        case .none:
            break
        case .arm(_, let ms):
            startDeadline(ms)
        case .cancel:
            deadline.cancel()
        }
    }

    @inline(__always)
    func perform(_ action: ConnectionStateMachine.NextAction) {
        switch action {
        case .readNextHead:
            readHeads()
        case .beginClosing:
            beginClosing()
        }
    }

    @inline(__always)
    func perform(_ action: ConnectionStateMachine.InputEndAction) {
        switch action {
        case .end:
            clientEnded()
        case .stopReading:
            stream.pauseReading()
        }
    }

    func perform(_ action: ConnectionStateMachine.ClosingAction) {
        switch action {
        case .none:
            break
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
        }
    }

    func perform(_ action: ConnectionStateMachine.ExpiryAction) {
        switch action {
        case .none:
            break
        case .close:
            close()
        case .refuseTimedOutHead:
            refuse(408)
        case .refuseProxyHeader:
            refuseProxyHeader(.timeout, "not complete within limits.header_timeout")
        case .answerLocalTimeout:
            respond(.plain(504))
        case .refuseTimedOutLocalBody:
            localCall.dropBody()
            refuse(408)
        case .connectTimedOut:
            if exchange.leg.wait != .none {
                upstreamWaitOver()
                return
            }
            if let pool = exchange.upstream?.pool { metrics.recordUpstreamConnectFailure(server: pool.metricsSlot) }
            context.log.upstreamFailed("connect()", errno: ETIMEDOUT, upstream: exchange.upstream?.pool)
            if (context.upstreams.group(exchange.leg.index)?.servers.count ?? 1) > 1 {
                upstreamFailed(ETIMEDOUT, connecting: true)  // a server that never answered: out, and another tried
                return
            }
            failUpstream(504, upstreamFault: true)
        case .checkUpstream:
            checkUpstream()
        }
    }

    func perform(_ action: ConnectionStateMachine.SilenceAction) {
        switch action {
        case .close:
            close()
        case .abortExchange:
            abort(.upstreamTimeout)
        case .upstreamTimedOut:
            context.log.upstreamFailed("response", errno: ETIMEDOUT, upstream: exchange.upstream?.pool)
            failUpstream(504, upstreamFault: true)
        case .requestTimedOut:
            failUpstream(408)
        }
    }
}
