import Logging
import SidecarApple
import SidecarEvent
import SidecarHTTP

/// A worker's way out to Apple, shared by the sign-in parts: the token API (a new client when
/// a reload moves Apple's address), Apple's keys, the loop's clock that times each call, and
/// where the flows record their calls (Apple's and the store's) as spans.
final class AppleCalls {
    private let loop: EventLoop
    /// Apple gets at most as long as an upstream would (and never more than 10 s), so a
    /// hanging Apple is a prompt 504 well inside the connection's own deadline.
    private let timeoutSeconds: Double
    private var settings: AuthSettings
    private let metrics: MetricsRecorder
    private let logger: Logger
    private var api: AppleTokenAPI
    let keys: AppleKeys
    /// Where the sign-in flows record their calls; nil when spans are not exported.
    var spans: SpanSink?

    init(
        loop: EventLoop, settings: AuthSettings, upstreamTimeoutMs: Int64, metrics: MetricsRecorder, logger: Logger
    ) throws(AuthSetupError) {
        self.loop = loop
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        timeoutSeconds = min(10, max(1, Double(upstreamTimeoutMs) / 1000))
        api = try Self.makeAPI(loop: loop, settings: settings, timeout: timeoutSeconds)
        keys = AppleKeys(loop: loop, api: api, refreshSeconds: settings.jwksRefreshSeconds, logger: logger, metrics: metrics)
    }

    /// The client a reload to `new` needs: nil when Apple's address did not change. Made
    /// before anything of the reload is applied, since it can fail.
    func client(for new: AuthSettings) throws(AuthSetupError) -> AppleTokenAPI? {
        guard new.appleEndpoint != settings.appleEndpoint || new.appleCAFile != settings.appleCAFile else { return nil }
        return try Self.makeAPI(loop: loop, settings: new, timeout: timeoutSeconds)
    }

    /// A reload: the new settings and, when `client(for:)` made one, the new client.
    func apply(_ new: AuthSettings, client: AppleTokenAPI?) {
        settings = new
        if let client {
            api = client
            keys.use(client)
        }
    }

    func stop() { keys.stop() }

    /// The loop's clock in milliseconds, for timing calls to Apple.
    private var clockMs: Int64 { loop.nowMilliseconds }

    /// Whether the calls of `trace` are recorded: only then is a call's start time read.
    func spanStart(for trace: TraceContext) -> UInt64 { spans == nil || !trace.isSampled ? 0 : SpanClock.nowNs() }

    /// An authorization code exchanged at Apple's token endpoint (the web callback, a native
    /// sign-in): timed into the Apple-call metrics and, when `trace` is sampled, a span of it.
    func exchangeCode(
        code: String, redirectURI: String?, codeVerifier: String?, clientID: String, clientSecret: String,
        trace: TraceContext, completion: @escaping (Result<TokenResponse, AppleError>) -> Void
    ) {
        api.exchangeCode(
            code: code, redirectURI: redirectURI, codeVerifier: codeVerifier, clientID: clientID,
            clientSecret: clientSecret, completion: timed(.token, span: .appleToken, trace: trace, completion))
    }

    /// A refresh token used at Apple's token endpoint (`session.revalidate`), timed and traced
    /// as `exchangeCode` is.
    func refresh(
        refreshToken: String, clientID: String, clientSecret: String, trace: TraceContext,
        completion: @escaping (Result<TokenResponse, AppleError>) -> Void
    ) {
        api.refresh(
            refreshToken: refreshToken, clientID: clientID, clientSecret: clientSecret,
            completion: timed(.token, span: .appleRefresh, trace: trace, completion))
    }

    /// Revokes an Apple refresh token with the client secret of `clientID`; `completion`
    /// runs once on this loop with nil on success or why it failed (a stable reason code).
    /// The call is a span of `trace` (the request that asked for it) when that is sampled.
    func revoke(
        _ refreshToken: String, clientID: String, trace: TraceContext,
        completion: @escaping (Result<Void, AppleRevokeFailure>) -> Void
    ) {
        let secret: String
        do { secret = try settings.secrets.secret(forClientID: clientID) } catch {
            return completion(.failure(AppleRevokeFailure(reason: "client_secret_failed")))
        }
        api.revoke(
            token: refreshToken, hint: .refreshToken, clientID: clientID, clientSecret: secret,
            completion: timed(.revoke, span: .appleRevoke, trace: trace) { result in
                completion(result.mapError { AppleRevokeFailure(reason: $0.lifecycleReason) })
            })
    }

    /// `completion`, after the call's time (from now) is recorded and its span when `trace`
    /// is sampled; nothing is recorded once this worker's sign-in is gone.
    private func timed<T>(
        _ call: AppleCall, span: SpanName, trace: TraceContext, _ completion: @escaping (Result<T, AppleError>) -> Void
    ) -> (Result<T, AppleError>) -> Void {
        let startedMs = clockMs
        let spanStartNs = spanStart(for: trace)
        return { [weak self] result in
            if let self {
                metrics.recordAppleCall(call, ms: clockMs - startedMs)
                if spanStartNs != 0 {
                    spans?.recordAppleCall(span, of: trace, method: .post, startNs: spanStartNs, result)
                }
            }
            completion(result)
        }
    }

    /// `revoke` for a caller that does not wait for the answer (logout: the local revocation
    /// already ended the session), whose outcome is only logged.
    func revokeInBackground(_ refreshToken: String, clientID: String, trace: TraceContext) {
        revoke(refreshToken, clientID: clientID, trace: trace) { [logger] result in
            switch result {
            case .success: logger.info("apple refresh token revoked", metadata: ["reason": "ok"])
            case .failure(let failure):
                logger.warning("apple refresh token revocation failed", metadata: ["reason": "\(failure.reason)"])
            }
        }
    }

    private static func makeAPI(loop: EventLoop, settings: AuthSettings, timeout: Double) throws(AuthSetupError) -> AppleTokenAPI {
        let configuration = AppleHTTPClient.Configuration(
            endpoint: settings.appleEndpoint, caFile: settings.appleCAFile, connectTimeout: min(5, timeout),
            totalTimeout: timeout)
        do {
            return AppleTokenAPI(client: try AppleHTTPClient(base: loop.base, configuration: configuration))
        } catch {
            throw AuthSetupError(description: "apple client: \(error)")
        }
    }
}

/// Why Apple did not confirm a token revocation: an `AppleError.lifecycleReason` or
/// `client_secret_failed` (never a secret).
struct AppleRevokeFailure: Error {
    let reason: String
}

extension AppleError {
    /// A bounded reason code for revocation and revalidation logs and metrics: Apple's own
    /// error code when it is one Apple documents (`apple_invalid_grant`, …), else the kind of
    /// failure (`apple_server_error`, `apple_invalid_response`, `apple_timeout`, …).
    var lifecycleReason: String {
        switch self {
        case .rejected(let code, _, _):
            if case .other = code { return "apple_rejected" }
            return "apple_" + code.code
        default:
            return LoginFailure.exchange(self).reason
        }
    }
}
