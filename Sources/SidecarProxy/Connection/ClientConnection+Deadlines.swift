import Glibc
import SidecarEvent
import SidecarHTTP

/// Backpressure between the two sides, and the one timer each connection has.
extension ClientConnection {
    // MARK: flow control

    func updateClientReading() {
        let wantsInput: Bool
        switch phase {
        case .exchanging:
            if exchange.requestRelay != nil {
                wantsInput = (exchange.upstream?.stream.pendingOutput ?? 0) <= context.settings.holdLimit
            } else {
                wantsInput = stream.pendingInput < Self.pipelineLimit
            }
        case .tunnel:
            wantsInput = (exchange.upstream?.stream.pendingOutput ?? 0) <= context.settings.holdLimit
        case .waitingForHead, .closing:
            wantsInput = true
        case .closed:
            return
        }
        if wantsInput { stream.resumeReading() } else { stream.pauseReading() }
    }

    // MARK: deadlines

    func startDeadline(_ ms: Int64) {
        deadline.start(ms, now: context.refreshedNowMs())
    }

    func deadlineFired() {
        guard deadline.fired(now: context.nowMs, armed: machine.deadline != .none) else { return }
        perform(machine.deadlineFired())
    }

    /// The upstream deadline passed: a slow client, a slow request body, or an upstream
    /// that made no progress for the whole `upstream_timeout`.
    func checkUpstream() {
        if phase == .exchanging, exchange.response != nil, let upstream = exchange.upstream, upstream.stream.isReadPaused {
            waitForClientToRead()
            return
        }
        if requestBodyTooSlow {
            refuseSlowBody()
            return
        }
        let idleFor = context.nowMs - exchange.lastProgressMs
        let timeout = upstreamTimeoutMs
        if idleFor < timeout {
            perform(machine.upstreamWaiting(ms: min(timeout - idleFor, bodyRateRecheckMs)))
        } else {
            perform(machine.upstreamSilent(responseStarted: exchange.response != nil))
        }
    }

    /// Pauses the upstream while the client's output holds more than the high watermark.
    /// From here until the client drains, the exchange waits for the client, not the upstream:
    /// the client's send bound (`limits.idle_timeout`, nginx's `send_timeout`) applies.
    func holdUpstreamForClient(_ upstream: UpstreamConnection) {
        upstream.stream.pauseReading()
        exchange.clientSend.start(written: stream.bytesWritten, nowMs: context.nowMs)
        // The deadline now also guards the client: it fires within the send bound (when it
        // finds the upstream resumed meanwhile, it re-arms for the upstream's remaining time).
        if machine.deadline == .upstream {
            perform(machine.upstreamWaiting(ms: min(context.settings.options.idleTimeoutMs, upstreamTimeoutMs)))
        }
    }

    /// The upstream deadline fired while the upstream is held back for a slow client: a
    /// client that read anything since the last look gets a new bound; one that read
    /// nothing for the whole bound is cut off and the exchange logged as incomplete.
    private func waitForClientToRead() {
        let waited = exchange.clientSend.stalledMs(written: stream.bytesWritten, nowMs: context.nowMs)
        let bound = context.settings.options.idleTimeoutMs
        if waited < bound {
            perform(machine.upstreamWaiting(ms: bound - waited))
        } else {
            abort(.clientSendTimeout)
        }
    }

    /// Arms the deadline of an exchange waiting on the upstream: `upstream_timeout`, or
    /// sooner while a request body is arriving and its rate is to be checked.
    func armUpstreamDeadline() {
        perform(machine.upstreamWaiting(ms: min(upstreamTimeoutMs, bodyRateRecheckMs)))
    }

    /// When to look at the request body's rate again: at the end of the grace period, then
    /// every second while the body is still arriving (`.max`: nothing to check).
    private var bodyRateRecheckMs: Int64 {
        guard exchange.requestRelay != nil, context.settings.options.minBodyRate > 0 else { return .max }
        let elapsed = context.nowMs - exchange.startedMs
        let grace = context.settings.options.minBodyGraceMs
        return elapsed < grace ? grace - elapsed : 1_000
    }

    /// `limits.min_body_rate` (Kestrel's model): from the grace period on, a request body
    /// must have averaged the rate since its first byte. A body dripping in slower would
    /// hold this connection and one of the upstream's for as long as the client likes.
    private var requestBodyTooSlow: Bool {
        guard let relay = exchange.requestRelay, context.settings.options.minBodyRate > 0 else { return false }
        let elapsed = context.nowMs - exchange.startedMs
        guard elapsed >= context.settings.options.minBodyGraceMs else { return false }
        return relay.transferred &* 1000 < UInt64(context.settings.options.minBodyRate) &* UInt64(elapsed)
    }

    /// 408 to the client and the upstream connection closed (the upstream sees its request
    /// end); after a response has started only the close is left.
    private func refuseSlowBody() {
        exchange.requestRelay = nil
        machine.mustClose()
        exchange.incomplete = .requestBodyTooSlow
        if exchange.response == nil {
            failUpstream(408)
        } else {
            abort(.requestBodyTooSlow)
        }
    }
}
