import Glibc
import Logging
import SidecarApple
import SidecarCrypto
import SidecarEvent
import Synchronization

/// A worker's copy of Apple's JWKS: fetched at start, refreshed every
/// `apple.jwks_refresh`, refetched on an unknown `kid` at most once per 60 s; a failed fetch
/// keeps the last good set and is retried (after 30 s, or sooner — 1, 2, 4 … s — while no set
/// is held, so a sidecar started before Apple is reachable gets ready soon). Loop thread only. Each worker keeps its own
/// copy (no cross-thread waiting; N workers fetch N times per period, which Apple tolerates).
/// What they log is process-wide (`AppleKeysLog`): an outage is one warning, not one per worker.
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
    /// When the held set was fetched (Unix seconds), for the message when a refresh fails.
    private var fetchedAt: Int64?
    private let log: AppleKeysLog
    private static let retrySeconds: Int64 = 30

    init(loop: EventLoop, api: AppleTokenAPI, refreshSeconds: Int64, logger: Logger, metrics: MetricsRecorder,
         log: AppleKeysLog = .shared) {
        self.loop = loop
        self.api = api
        self.logger = logger
        self.metrics = metrics
        self.log = log
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
                    self.fetched(set, reason: reason, now: now)
                } catch {
                    self.policy.fetched(Result<JWKSet, JWKSet.ParseError>.failure(error), now: now)
                    self.failed(reason: "jwks_\(error)", why: "the answer is not a usable key set: \(error)")
                }
            case .failure(let error):
                self.policy.fetched(Result<JWKSet, AppleError>.failure(error), now: now)
                self.failed(reason: LoginFailure.exchange(error).reason, why: Self.explain(error))
            }
            self.flushWaiters()
        }
    }

    private func fetched(_ set: JWKSet, reason: JWKSRefreshPolicy.FetchReason, now: Int64) {
        fetchedAt = now
        failuresWithoutKeys = 0
        metrics.recordKeysFetch(succeeded: true)
        metrics.reportAppleKeys(.held)
        timer.schedule(afterMilliseconds: policy.refreshInterval * 1000)
        let kids = set.keyIDs.sorted()
        let news = log.fetched(keyIDs: kids)
        let metadata: Logger.Metadata = ["reason": "\(reason.rawValue)", "kids": "\(kids.joined(separator: ","))"]
        switch news {
        case .recovered(let failures):
            logger.notice("apple keys fetched from \(keysURL) after \(failures) failed attempt\(failures == 1 ? "" : "s")",
                          metadata: metadata)
        case .newSet: logger.info("apple keys fetched", metadata: metadata)
        case .known: logger.debug("apple keys fetched", metadata: metadata)
        }
    }

    /// Schedules the retry, then says what happened — with the URL, why, what the sign-in
    /// flow is left with, and when the next attempt is — once per outage per process.
    private func failed(reason: String, why: String) {
        metrics.recordKeysFetch(succeeded: false)
        let delay = retryLater()
        let held = fetchedAt.map { "keeping the previous set (fetched at \(Self.timestamp($0)))" }
            ?? "no keys yet, sign-ins will fail until a fetch succeeds"
        let message: Logger.Message = "apple keys: fetch from \(keysURL) failed (\(why)); \(held); retrying in \(delay)s"
        let metadata: Logger.Metadata = ["reason": "\(reason)"]
        if log.failed() {
            logger.warning(message, metadata: metadata)
        } else {
            logger.debug(message, metadata: metadata)
        }
    }

    /// Re-arms the timer; returns the delay in seconds.
    private func retryLater() -> Int64 {
        var delay = Self.retrySeconds
        if policy.keySet == nil {
            delay = min(delay, Int64(1) << min(failuresWithoutKeys, 5))
            failuresWithoutKeys += 1
        }
        timer.schedule(afterMilliseconds: delay * 1000)
        return delay
    }

    /// Apple's key-set URL, as the operator would type it.
    private var keysURL: String {
        let endpoint = api.client.configuration.endpoint
        let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
        let defaultPort: UInt16 = endpoint.scheme == .https ? 443 : 80
        let port = endpoint.port == defaultPort ? "" : ":\(endpoint.port)"
        return "\(endpoint.scheme.rawValue)://\(host)\(port)\(endpoint.basePath)/auth/keys"
    }

    /// In words, for the operator (the `reason` metadata keeps the stable code).
    static func explain(_ error: AppleError) -> String {
        switch error {
        case .transport(.dnsFailure): "host name not found"
        case .transport(.connectFailed): "connection refused or host unreachable"
        case .transport(.tlsHandshakeFailed(let result)):
            result == 0 ? "TLS handshake failed" : "TLS certificate not accepted: OpenSSL verify result \(result)"
        case .transport(.timeout): "no answer in time"
        case .transport(.connectionClosed): "connection closed before a complete answer"
        case .transport(.malformedResponse): "malformed HTTP answer"
        case .transport(.bodyTooLarge): "answer too large"
        case .appleServerError(let status): "HTTP \(status)"
        case .invalidResponse(let status): "HTTP \(status) without a key set"
        case .rejected(let code, _, let status): "HTTP \(status), \(code.code)"
        }
    }

    /// `2026-11-22T10:04:05Z`.
    static func timestamp(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    private func flushWaiters() {
        let ready = waiters
        waiters = []
        for waiter in ready { waiter(policy.keySet) }
    }
}

/// What the workers' key fetches have told the operator, shared by every worker of the
/// process: each worker fetches for itself, but Apple being unreachable is one event, so the
/// first failure of an outage is a warning and the rest of it (other workers, retries) debug;
/// a key set is announced once, not once per worker.
final class AppleKeysLog: Sendable {
    static let shared = AppleKeysLog()

    enum Fetched: Equatable {
        /// The first success after an outage that was reported.
        case recovered(failures: Int)
        /// A key set not announced before.
        case newSet
        /// Another worker already announced this set.
        case known
    }

    private struct State {
        var failures = 0
        var announced: [String]?
    }

    private let state = Mutex(State())

    /// Records a failed fetch; true when it begins an outage (log it as a warning).
    func failed() -> Bool {
        state.withLock { state in
            state.failures += 1
            return state.failures == 1
        }
    }

    /// Records a successful fetch of the set with these (sorted) key ids.
    func fetched(keyIDs: [String]) -> Fetched {
        state.withLock { state in
            defer {
                state.failures = 0
                state.announced = keyIDs
            }
            if state.failures > 0 { return .recovered(failures: state.failures) }
            return state.announced == keyIDs ? .known : .newSet
        }
    }
}
