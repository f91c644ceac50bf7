import Logging
import SidecarApple
import SidecarCrypto
import SidecarEvent

/// A worker's copy of Apple's JWKS (SPEC §4.2 step 3): fetched at start, refreshed every
/// `apple.jwks_refresh`, refetched on an unknown `kid` at most once per 60 s; a failed fetch
/// keeps the last good set and is retried. Loop thread only. Each worker keeps its own
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

    init(loop: EventLoop, api: AppleTokenAPI, refreshSeconds: Int64, logger: Logger) {
        self.loop = loop
        self.api = api
        self.logger = logger
        policy = JWKSRefreshPolicy(refreshInterval: refreshSeconds)
        timer = Timer(loop: loop) { [unowned self] in self.fetchIfDue() }
        timer.schedule(afterMilliseconds: 0)  // the initial fetch, once the loop runs
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
        api.fetchJWKS { [weak self] result in
            guard let self else { return }
            self.fetching = false
            let now = UnixTime.now()
            switch result {
            case .success(let response):
                do throws(JWKSet.ParseError) {
                    let set = try JWKSet(json: response.body)
                    self.policy.fetched(Result<JWKSet, JWKSet.ParseError>.success(set), now: now)
                    self.logger.info("apple keys fetched", metadata: [
                        "reason": "\(reason.rawValue)", "kids": "\(set.keyIDs.joined(separator: ","))",
                    ])
                    self.timer.schedule(afterMilliseconds: self.policy.refreshInterval * 1000)
                } catch {
                    self.policy.fetched(Result<JWKSet, JWKSet.ParseError>.failure(error), now: now)
                    self.logger.warning("apple keys unusable; keeping the previous set", metadata: ["reason": "jwks_\(error)"])
                    self.timer.schedule(afterMilliseconds: self.policy.retryInterval * 1000)
                }
            case .failure(let error):
                self.policy.fetched(Result<JWKSet, AppleError>.failure(error), now: now)
                self.logger.warning("apple keys fetch failed; keeping the previous set", metadata: [
                    "reason": "\(LoginFailure.exchange(error).reason)",
                ])
                self.timer.schedule(afterMilliseconds: self.policy.retryInterval * 1000)
            }
            self.flushWaiters()
        }
    }

    private func flushWaiters() {
        let ready = waiters
        waiters = []
        for waiter in ready { waiter(policy.keySet) }
    }
}
