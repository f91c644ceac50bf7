import SidecarHTTP2
import SidecarEvent

/// A worker's side of `/metrics` and `/readyz` (loop thread only): plain counters published
/// to the `MetricsBoard` at most once a second (only after a change), and the worker's Apple
/// key state reported to `Readiness` when it changes.
final class MetricsRecorder {
    private(set) var metrics = WorkerMetrics()
    private let board: MetricsBoard
    private let readiness: Readiness
    private let worker: Int
    private var publishTimer: Timer?
    /// The timer is armed: a change needs no libevent call (two per request otherwise).
    private var publishPending = false
    private var keyState = Readiness.AppleKeyState.unknown

    init(loop: EventLoop, board: MetricsBoard, readiness: Readiness, worker: Int) {
        self.board = board
        self.readiness = readiness
        self.worker = worker
        publishTimer = Timer(loop: loop) { [unowned self] in
            self.publishPending = false
            self.board.publish(self.metrics, worker: self.worker)
        }
    }

    /// The `server` label slots every worker shares.
    var serverLabels: ServerLabels { board.serverLabels }

    func recordRequest(route: WorkerMetrics.Route, status: Int, http2: Bool) {
        metrics.recordRequest(route: route, status: status, http2: http2)
        changed()
    }

    /// Part of a request's record (its site), published with `recordRequest`, which follows it.
    func recordSiteRequest(_ site: Int, status: Int) {
        metrics.recordSiteRequest(site, status: status)
    }

    /// Part of a request's record: published with the request that follows it.
    func recordUpstreamLatency(server slot: Int, ms: Int64) {
        metrics.upstreamLatency[slot].record(ms: ms)
    }

    func recordRequestDuration(route: WorkerMetrics.Route, ms: Int64) {
        metrics.requestDuration[route.rawValue].record(ms: ms)
    }

    func recordIncomplete(_ reason: IncompleteReason) {
        metrics.incomplete[reason.rawValue] &+= 1
        changed()
    }

    func recordProxyHeaderRefusal(_ reason: ProxyHeaderRefusal) {
        metrics.proxyHeaderRefusals[reason.rawValue] &+= 1
        changed()
    }

    func recordHTTP2Connection() {
        metrics.http2[0] &+= 1
        changed()
    }

    func recordHTTP2Stream() {
        metrics.http2[1] &+= 1
        changed()
    }

    func recordHTTP2Refusal(_ reason: H2Session.Refusal) {
        metrics.http2Refusals[H2Session.Refusal.allCases.firstIndex(of: reason) ?? 0] &+= 1
        changed()
    }

    func recordNotification(_ outcome: NotificationOutcome) {
        metrics.notifications[outcome.rawValue] &+= 1
        changed()
    }

    func recordForward(delivered: Bool) {
        metrics.forwards[delivered ? 0 : 1] &+= 1
        changed()
    }

    func recordAccountDeletion(_ outcome: AccountDeletionOutcome) {
        metrics.accountDeletions[outcome.rawValue] &+= 1
        changed()
    }

    func recordRevalidation(_ outcome: RevalidationOutcome) {
        metrics.revalidations[outcome.rawValue] &+= 1
        changed()
    }

    func recordDescriptorExhaustion() {
        metrics.acceptDescriptorFailures &+= 1
        changed()
    }

    func recordUpstreamConnectFailure(server slot: Int) {
        metrics.upstreamConnectFailures[slot] &+= 1
        changed()
    }

    func setOpenConnections(_ count: Int) {
        metrics.openConnections = count
        changed()
    }

    /// A login's last step: `reason` is "ok" or the failure's reason code.
    func recordLogin(_ reason: String) {
        metrics.logins[LoginOutcome.index(of: reason)] &+= 1
        changed()
    }

    /// A native sign-in's answer: `reason` is "ok" or the failure's reason code.
    func recordNativeSignIn(_ reason: String) {
        metrics.nativeSignIns[NativeOutcome.index(of: reason)] &+= 1
        changed()
    }

    /// A `/native/refresh`: `.accepted`, why the bearer session was refused, or nil without one.
    func recordNativeRefresh(_ outcome: SessionOutcome?) {
        metrics.nativeRefreshes[NativeRefreshOutcome.index(of: outcome)] &+= 1
        changed()
    }

    func recordSession(_ outcome: SessionOutcome, via carrier: SessionCarrier) {
        metrics.recordSession(outcome, via: carrier)
        changed()
    }

    /// Part of a request's record (its session's outcome is recorded next).
    @inline(__always)
    func recordSessionCache(found: Bool) {
        metrics.sessionCache[found ? 0 : 1] &+= 1
    }

    func recordReseal(_ reason: ResealReason) {
        metrics.reseals[reason.rawValue] &+= 1
        changed()
    }

    func recordKeysFetch(succeeded: Bool) {
        metrics.jwksRefreshes[succeeded ? 0 : 1] &+= 1
        changed()
    }

    func recordAppleCall(_ call: AppleCall, ms: Int64) {
        metrics.appleLatency[call.rawValue].record(ms: ms)
        changed()
    }

    /// Whether this worker needs Apple's keys and holds them; reported only on a change.
    func reportAppleKeys(_ state: Readiness.AppleKeyState) {
        guard state != keyState else { return }
        keyState = state
        readiness.report(state, worker: worker)
    }

    /// Publishes now (the worker is stopping, or a test wants the numbers).
    func publish() {
        publishTimer?.cancel()
        publishPending = false
        board.publish(metrics, worker: worker)
    }

    private func changed() {
        guard !publishPending, let publishTimer else { return }
        publishPending = true
        publishTimer.schedule(afterMilliseconds: 1000)
    }
}
