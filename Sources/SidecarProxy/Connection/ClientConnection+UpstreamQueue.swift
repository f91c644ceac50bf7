import SidecarEvent
import SidecarHTTP

/// Waiting for an upstream connection when a cap is reached (`UpstreamAdmission`): the
/// client connection's (HTTP/2 streams), the upstream's own, or the worker's descriptor budget.
/// Queued, never refused while a connection may free within `upstream_connect_timeout`; 503
/// with `Retry-After` when it did not.
extension ClientConnection {
    @inline(__always)
    func upstreamAdmission(_ pool: UpstreamPool, fresh: Bool) -> UpstreamAdmission {
        // The common case, decided without the counts: an HTTP/1.1 exchange (no cap of its
        // own) and an idle connection to reuse, which no cap can refuse.
        if upstreamAllowance == nil, !fresh, pool.idleCount > 0 { return .reuse }
        return admissionCounted(pool, fresh: fresh)
    }

    private func admissionCounted(_ pool: UpstreamPool, fresh: Bool) -> UpstreamAdmission {
        let budget = pool.budget
        var counts = UpstreamAdmission.Counts(
            idleInPool: pool.idleCount, openInPool: pool.open, poolLimit: pool.limit,
            openInWorker: budget.open, workerLimit: budget.limit, fresh: fresh)
        if let upstreamAllowance {
            counts.held = upstreamAllowance.held
            counts.clientLimit = upstreamAllowance.limit
        }
        if counts.openInWorker >= counts.workerLimit { counts.idleInWorker = context.upstreams.idleConnections }
        return UpstreamAdmission.decide(counts)
    }

    /// Queues the exchange under the connect deadline; its request body is not read meanwhile
    /// (HTTP/2: the stream's window stays closed).
    func waitForUpstream(_ pool: UpstreamPool, fresh: Bool) {
        exchange.leg.enterQueue(fresh: fresh, allowance: upstreamAllowance)
        pool.budget.waiters.append(self)
        stream.pauseReading()
        perform(machine.upstreamConnecting(timeoutMs: pool.connectTimeoutMs))
    }

    /// Whether a connection would be had now (the worker's pass over its waiters).
    var mayLeaveUpstreamQueue: Bool {
        guard exchange.leg.wait != .none, phase == .exchanging, let group = context.upstreams.group(exchange.leg.index) else {
            return true
        }
        let fresh = exchange.leg.wait == .waitingFresh
        return group.servers.contains { upstreamAdmission($0, fresh: fresh) != .wait }
    }

    /// Taken off the queue: connects as it would have at first.
    func leftUpstreamQueue() {
        let fresh = exchange.leg.wait == .waitingFresh
        guard exchange.leg.wait != .none else { return }
        exchange.leg.leaveQueue(allowance: upstreamAllowance)
        guard phase == .exchanging, let request = exchange.request else { return }
        request.withView { connectUpstream(request, $0, fresh: fresh) }
    }

    func leaveUpstreamQueue() {
        exchange.leg.leaveQueue(allowance: upstreamAllowance)
        context.upstreams.budget.waiters.remove(self)
    }

    /// The connect deadline passed in the queue: 503 with `Retry-After`, not the upstream's
    /// fault (it was never asked) and not a 504 (nothing timed out talking to it).
    func upstreamWaitOver() {
        let group = context.upstreams.group(exchange.leg.index)
        leaveUpstreamQueue()
        context.log.upstreamBusy(group, budget: context.upstreams.budget)
        exchange.upstreamFailure = false
        machine.answerWithoutReadingBody()
        var answer = exchange.request.map { context.settings.policy.localError(503, $0, path: exchange.path) } ?? .plain(503)
        answer.extraFields.append(("Retry-After", Self.retryAfterBusy))
        respond(answer)
    }

    static let retryAfterBusy: [UInt8] = Array("1".utf8)
}
