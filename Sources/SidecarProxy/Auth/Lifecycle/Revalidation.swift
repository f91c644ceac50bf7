import Logging
import SidecarApple
import SidecarCrypto
import SidecarHTTP
import SidecarStore
import Synchronization

/// `session.revalidate`: at most once per period, a session's Apple refresh token is
/// used to confirm the user has not revoked the app (a revoked or deleted
/// authorization shows up as `invalid_grant`, sometimes `invalid_request`, on refresh).
///
/// Never on the request's critical path: the request that finds its session due is let
/// through and the refresh runs in the background on the worker's loop. Its outcome is kept in
/// the process-wide `RevalidationTable`, which the next requests of that session consult:
/// a confirmation is re-sealed into the cookie (`lastRevalidation` moves, so the session is
/// not due again for a period) or, for a bearer session, into the token `POST
/// /native/refresh` hands out; a definite refusal revokes the session id through the store,
/// so every worker (and, with a shared store, every replica) refuses it from then on.
final class SessionRevalidator {
    private var settings: AuthSettings
    private let apple: AppleCalls
    private let metrics: MetricsRecorder
    private let logger: Logger

    init(settings: AuthSettings, apple: AppleCalls, metrics: MetricsRecorder, logger: Logger) {
        self.settings = settings
        self.apple = apple
        self.metrics = metrics
        self.logger = logger
    }

    func apply(_ new: AuthSettings) { settings = new }

    /// Called only when `now >= opened.nextRevalidation` (one integer compare per request).
    /// Returns the time of a confirmation this session's token does not carry yet (the caller
    /// re-seals it), else nil; starts the check when it is due and nobody runs it. The check's
    /// calls (Apple's refresh, the store's revocation) are spans of `trace`, the request that
    /// started it, when that is sampled.
    func revalidate(_ opened: OpenedSession, now: Int64, trace: TraceContext = TraceContext()) -> Int64? {
        let period = settings.revalidateSeconds
        let session = opened.session
        guard period > 0, let refreshToken = session.appleRefreshToken else {
            opened.nextRevalidation = .max
            return nil
        }
        let table = settings.shared.revalidations
        switch table.decide(Key128(session.id), lastRevalidation: session.lastRevalidation, period: period, now: now) {
        case .confirmed(let at):
            return at
        case .wait(let until):
            opened.nextRevalidation = until
            return nil
        case .full:
            // Thousands of checks in flight or failing: this one waits, the session stays.
            opened.nextRevalidation = now + RevalidationTable.retrySeconds
            metrics.recordRevalidation(.skipped)
            logger.warning("session revalidation skipped", metadata: ["reason": "table_full", "sub": "\(session.subject)"])
            return nil
        case .start:
            // Other requests of this token skip the table until the answer is in (see below).
            opened.nextRevalidation = now + RevalidationTable.inFlightSeconds
            startRevalidation(opened, refreshToken: refreshToken, trace: trace)
            return nil
        }
    }

    /// Whether a session's token is due by its own `lastRevalidation` (for `/native/refresh`,
    /// which must look past the per-worker memo: the token it hands out carries the result).
    func isRevalidationDue(_ session: Session, now: Int64) -> Bool {
        let period = settings.revalidateSeconds
        return period > 0 && session.appleRefreshToken != nil && now - session.lastRevalidation >= period
    }

    private func startRevalidation(_ opened: OpenedSession, refreshToken: String, trace: TraceContext) {
        let settings = self.settings, session = opened.session
        let key = Key128(session.id)
        let clientID = session.appleClientID ?? settings.clientID
        let secret: String
        do { secret = try settings.secrets.secret(forClientID: clientID) } catch {
            return revalidationKept(session, key: key, .keptClientSecret, settings: settings)
        }
        apple.refresh(refreshToken: refreshToken, clientID: clientID, clientSecret: secret, trace: trace) {
            [weak self, weak opened] result in
            // The token's next request on this worker looks at the outcome (a confirmation is
            // re-sealed into the cookie at once); other workers' copies wait at most a second.
            opened?.nextRevalidation = 0
            guard let self else {
                settings.shared.revalidations.finish(key, .unconfirmed(at: UnixTime.now()))
                return
            }
            switch result {
            case .success:
                settings.shared.revalidations.finish(key, .confirmed(at: UnixTime.now()))
                metrics.recordRevalidation(.confirmed)
                logger.info("session revalidated", metadata: ["reason": "ok", "sub": "\(session.subject)"])
            case .failure(.rejected(.invalidGrant, _, _)):
                endSession(session, key: key, .endedInvalidGrant, settings: settings, trace: trace)
            case .failure(.rejected(.invalidRequest, _, _)):
                endSession(session, key: key, .endedInvalidRequest, settings: settings, trace: trace)
            case .failure(let error):
                revalidationKept(session, key: key, RevalidationOutcome.kept(error), settings: settings)
            }
        }
    }

    /// Apple definitely refused the token: the user revoked the app or deleted the account.
    private func endSession(
        _ session: Session, key: Key128, _ outcome: RevalidationOutcome, settings: AuthSettings, trace: TraceContext
    ) {
        let spanStartNs = apple.spanStart(for: trace)
        settings.shared.store.revokeSession(id: session.id, expiresAt: session.expiresAt) { [self] result in
            if spanStartNs != 0 {
                apple.spans?.recordStoreCall(.storeRevoke, of: trace, startNs: spanStartNs, failed: result.isFailure)
            }
            if case .failure(let error) = result {
                // Not recorded: the session goes on until the next attempt, 5 minutes on.
                logger.error("session revalidation failed to end the session", metadata: [
                    "reason": "store_failed", "apple": "\(outcome.reason)", "error": "\(error)", "sub": "\(session.subject)",
                ])
                return revalidationKept(session, key: key, .keptStoreFailed, settings: settings, logged: true)
            }
            settings.shared.revalidations.finish(key, nil)
            metrics.recordRevalidation(outcome)
            logger.notice("session ended by revalidation", metadata: ["reason": "\(outcome.reason)", "sub": "\(session.subject)"])
        }
    }

    /// Apple could not say: the session stays; the check is retried on one of its requests
    /// at least `RevalidationTable.retrySeconds` later.
    private func revalidationKept(
        _ session: Session, key: Key128, _ outcome: RevalidationOutcome, settings: AuthSettings, logged: Bool = false
    ) {
        settings.shared.revalidations.finish(key, .unconfirmed(at: UnixTime.now()))
        metrics.recordRevalidation(outcome)
        guard !logged else { return }
        logger.warning("session revalidation inconclusive; session kept", metadata: [
            "reason": "\(outcome.reason)", "sub": "\(session.subject)",
            "retry_in_s": .stringConvertible(RevalidationTable.retrySeconds),
        ])
    }
}

/// The revalidations of every worker, by session id (a `Mutex`, touched only by requests whose
/// session is due, so never on the common path): one check in flight per session process-wide,
/// the last confirmation for the tokens that do not carry it yet, and when a check that Apple
/// could not answer may be tried again. Bounded: stale entries are swept when it fills up.
final class RevalidationTable: Sendable {
    enum Entry: Sendable {
        case inFlight(since: Int64)
        case confirmed(at: Int64)
        case unconfirmed(at: Int64)
    }

    enum Decision: Equatable {
        /// Checked at `at`: a token with an older `lastRevalidation` is to be re-sealed.
        case confirmed(Int64)
        /// Nothing to do before `until` (a check in flight, or one that failed recently).
        case wait(until: Int64)
        /// The caller runs the check and reports through `finish`.
        case start
        /// No room to remember a new check.
        case full
    }

    /// When Apple cannot answer, the next attempt is at least this much later.
    static let retrySeconds: Int64 = 300
    /// A check in flight longer than this is assumed lost (Apple calls time out after 10 s).
    static let inFlightSeconds: Int64 = 60
    static let defaultCapacity = 100_000

    private let entries = Mutex<[Key128: Entry]>([:])
    private let capacity: Int

    init(capacity: Int = defaultCapacity) { self.capacity = capacity }

    var count: Int { entries.withLock { $0.count } }

    func decide(_ id: Key128, lastRevalidation: Int64, period: Int64, now: Int64) -> Decision {
        entries.withLock { table in
            switch table[id] {
            case .inFlight(let since)? where now - since < Self.inFlightSeconds:
                return .wait(until: now + 1)
            case .confirmed(let at)? where now - at < period:
                return at > lastRevalidation ? .confirmed(at) : .wait(until: lastRevalidation + period)
            case .unconfirmed(let at)? where now - at < Self.retrySeconds:
                return .wait(until: at + Self.retrySeconds)
            case nil where table.count >= capacity:
                Self.sweep(&table, now: now, period: period, capacity: capacity)
                if table.count >= capacity { return .full }
            default:
                break
            }
            table[id] = .inFlight(since: now)
            return .start
        }
    }

    /// The check's outcome; nil forgets the session (it was ended).
    func finish(_ id: Key128, _ entry: Entry?) {
        entries.withLock { $0[id] = entry }
    }

    /// Drops what no decision needs any more; if that is not enough, confirmations too (a
    /// token that missed one is checked with Apple again, which is harmless).
    private static func sweep(_ table: inout [Key128: Entry], now: Int64, period: Int64, capacity: Int) {
        table = table.filter { _, entry in
            switch entry {
            case .inFlight(let since): now - since < inFlightSeconds
            case .confirmed(let at): now - at < period
            case .unconfirmed(let at): now - at < retrySeconds
            }
        }
        guard table.count >= capacity * 9 / 10 else { return }
        table = table.filter { _, entry in if case .confirmed = entry { false } else { true } }
    }
}

/// `sidecar_session_revalidations_total{result,reason}`.
enum RevalidationOutcome: Int, CaseIterable {
    case confirmed = 0, endedInvalidGrant, endedInvalidRequest
    case keptUnreachable, keptTimeout, keptServerError, keptInvalidResponse, keptInvalidClient, keptRejected
    case keptClientSecret, keptStoreFailed, skipped

    var result: String {
        switch self {
        case .confirmed: "confirmed"
        case .endedInvalidGrant, .endedInvalidRequest: "ended"
        case .skipped: "skipped"
        default: "kept"
        }
    }

    var reason: String {
        switch self {
        case .confirmed: "ok"
        case .endedInvalidGrant: "apple_invalid_grant"
        case .endedInvalidRequest: "apple_invalid_request"
        case .keptUnreachable: "apple_unreachable"
        case .keptTimeout: "apple_timeout"
        case .keptServerError: "apple_server_error"
        case .keptInvalidResponse: "apple_invalid_response"
        case .keptInvalidClient: "apple_invalid_client"
        case .keptRejected: "apple_rejected"
        case .keptClientSecret: "client_secret_failed"
        case .keptStoreFailed: "store_failed"
        case .skipped: "table_full"
        }
    }

    /// An answer that does not say the token is revoked.
    static func kept(_ error: AppleError) -> RevalidationOutcome {
        switch error {
        case .rejected(.invalidClient, _, _): .keptInvalidClient
        case .rejected: .keptRejected
        case .appleServerError: .keptServerError
        case .invalidResponse: .keptInvalidResponse
        case .transport(.timeout): .keptTimeout
        case .transport: .keptUnreachable
        }
    }
}
