import Logging
import SidecarApple
import SidecarCrypto
import SidecarEvent

/// A worker's copy of Apple's JWKS (SPEC §4.2 step 3): fetched at start, refreshed every
/// `apple.jwks_refresh`, refetched on an unknown `kid` at most once per 60 s; a failed fetch
/// keeps the last good set and is retried (after 30 s, or sooner — 1, 2, 4 … s — while no set
/// is held, so a sidecar started before Apple is reachable gets ready soon). Loop thread only. Each worker keeps its own
/// copy (no cross-thread waiting; N workers fetch N times per period, which Apple tolerates).
final class AppleKeys {
    private var policy: JWKSRefreshPolicy
    private var api: AppleTokenAPI
    private let logger: Logger
    private let loop: EventLoop
    private var timer: Timer!
    /// Callbacks waiting for the fetch in flight.
    private var waiters: [(JWKSet?) -> Void] = []
    private var fetching = false
    private let metrics: MetricsRecorder
    /// Failed fetches in a row while no set is held (the back-off exponent).
    private var failuresWithoutKeys = 0
    private static let retrySeconds: Int64 = 30

    init(loop: EventLoop, api: AppleTokenAPI, refreshSeconds: Int64, logger: Logger, metrics: MetricsRecorder) {
        self.loop = loop
        self.api = api
        self.logger = logger
        self.metrics = metrics
        // The policy allows a retry after 1 s; `retryDelayMs` paces the timer.
        policy = JWKSRefreshPolicy(refreshInterval: refreshSeconds, retryInterval: 1)
        timer = Timer(loop: loop) { [unowned self] in self.fetchIfDue() }
        timer.schedule(afterMilliseconds: 0)  // the initial fetch, once the loop runs
        metrics.reportAppleKeys(.missing)
    }

    var current: JWKSet? { policy.keySet }

    func use(_ api: AppleTokenAPI) { self.api = api }

    func stop() { timer.cancel() }

    /// Calls `body` with the key set once one is available (now, or after the fetch that is
    /// due or in flight); nil when no set could be had.
    func withKeys(_ body: @escaping (JWKSet?) -> Void) {
        if let set = policy.keySet {
            body(set)
            return
        }
        waiters.append(body)
        if !fetching { fetchIfDue() }
        if !fetching { flushWaiters() }
    }

    /// A token named a kid we do not have: refetch (rate-limited) and call `body` with the
    /// new set, or with nil when no refetch is allowed now.
    func refetchForUnknownKey(_ body: @escaping (JWKSet?) -> Void) {
        guard fetching || policy.noteUnknownKey(now: UnixTime.now()) else {
            body(nil)
            return
        }
        waiters.append(body)
        if !fetching { fetchIfDue() }
        if !fetching { flushWaiters() }
    }

    private func fetchIfDue() {
        guard !fetching, let reason = policy.decide(now: UnixTime.now()) else { return }
        fetching = true
        let startedMs = loop.nowMilliseconds
        api.fetchJWKS { [weak self] result in
            guard let self else { return }
            self.fetching = false
            let now = UnixTime.now()
            self.metrics.recordAppleCall(.keys, ms: self.loop.nowMilliseconds - startedMs)
            switch result {
            case .success(let response):
                do throws(JWKSet.ParseError) {
                    let set = try JWKSet(json: response.body)
                    self.policy.fetched(Result<JWKSet, JWKSet.ParseError>.success(set), now: now)
                    self.logger.info("apple keys fetched", metadata: [
                        "reason": "\(reason.rawValue)", "kids": "\(set.keyIDs.joined(separator: ","))",
                    ])
                    self.failuresWithoutKeys = 0
                    self.metrics.recordKeysFetch(succeeded: true)
                    self.metrics.reportAppleKeys(.held)
                    self.timer.schedule(afterMilliseconds: self.policy.refreshInterval * 1000)
                } catch {
                    self.policy.fetched(Result<JWKSet, JWKSet.ParseError>.failure(error), now: now)
                    self.logger.warning("apple keys unusable; keeping the previous set", metadata: ["reason": "jwks_\(error)"])
                    self.retryLater()
                }
            case .failure(let error):
                self.policy.fetched(Result<JWKSet, AppleError>.failure(error), now: now)
                self.logger.warning("apple keys fetch failed; keeping the previous set", metadata: [
                    "reason": "\(LoginFailure.exchange(error).reason)",
                ])
                self.retryLater()
            }
            self.flushWaiters()
        }
    }

    private func retryLater() {
        metrics.recordKeysFetch(succeeded: false)
        var delay = Self.retrySeconds
        if policy.keySet == nil {
            delay = min(delay, Int64(1) << min(failuresWithoutKeys, 5))
            failuresWithoutKeys += 1
        }
        timer.schedule(afterMilliseconds: delay * 1000)
    }

    private func flushWaiters() {
        let ready = waiters
        waiters = []
        for waiter in ready { waiter(policy.keySet) }
    }
}
