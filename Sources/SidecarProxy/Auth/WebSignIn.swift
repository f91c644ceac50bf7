import SidecarCrypto
import SidecarHTTP

/// The web sign-in: `GET {prefix}/login?rd=` seals a fresh state, nonce and PKCE verifier
/// into a login cookie of its own, then a 302 to Apple's authorize page; `POST
/// {prefix}/callback` (`CallbackFlow`) finishes it.
///
/// Each login gets its own cookie, `<prefix>-login-<first 12 hex digits of SHA-256(state)>`,
/// so several tabs can sign in at once; the callback finds its cookie by the state Apple
/// returns. A browser already holding `maximumLoginCookies` of them gets them all cleared
/// (abandoned attempts), which bounds the Cookie header. On a site with a public_url of its
/// own, the site's Services ID and callback, and the state sealed to the site
/// (`SignInRealm.loginContextSuffix`).
final class WebSignIn {
    private var settings: AuthSettings
    private let apple: AppleCalls
    private let metrics: MetricsRecorder

    init(settings: AuthSettings, apple: AppleCalls, metrics: MetricsRecorder) {
        self.settings = settings
        self.apple = apple
        self.metrics = metrics
    }

    func apply(_ new: AuthSettings) { settings = new }

    func login(_ request: EndpointRequest) -> LocalResponse {
        let settings = self.settings
        let now = UnixTime.now()
        let head = request.head
        let realm = settings.realms.all[settings.realms.realm(of: head)]
        let fields = head.query.flatMap { FormFields(head.bytes($0)) }
        let target = fields?.single("rd").flatMap { settings.redirects.safeTarget($0) } ?? "/"

        let state: String, nonce: String, verifier: String?
        do {
            state = Base64URL.encode(try SecureRandom.bytes(24))
            nonce = Base64URL.encode(try SecureRandom.bytes(24))
            verifier = settings.pkce ? Base64URL.encode(try SecureRandom.bytes(32)) : nil
        } catch {
            request.logger.error("login failed", metadata: ["reason": "random_failed"])
            metrics.recordLogin("random_failed")
            return AuthPages.failure(.internalError, json: request.isAPIClient, loginPath: settings.loginPath, pages: settings.pages(for: head),
                                     for: request.head)
        }
        let login = LoginState(
            state: state, nonce: nonce, codeVerifier: verifier, redirectTarget: target, createdAt: now,
            expiresAt: now + AuthSettings.loginStateSeconds)
        let cookieName = settings.loginCookieName(forState: state)
        guard login.isEncodable, let sealed = try? settings.loginStates.seal(login, context: cookieName + realm.loginContextSuffix) else {
            request.logger.error("login failed", metadata: ["reason": "state_seal_failed"])
            metrics.recordLogin("state_seal_failed")
            return AuthPages.failure(.internalError, json: request.isAPIClient, loginPath: settings.loginPath, pages: settings.pages(for: head),
                                     for: request.head)
        }

        var query: [(String, String)] = [
            ("client_id", realm.clientID), ("redirect_uri", realm.redirectURI), ("response_type", "code"),
            ("response_mode", "form_post"),
        ]
        if !settings.scopes.isEmpty { query.append(("scope", settings.scopes.joined(separator: " "))) }
        query.append(("state", state))
        query.append(("nonce", Self.nonceHash(nonce)))
        if let verifier {
            query.append(("code_challenge", Base64URL.encode(SHA256.hash(Array(verifier.utf8)))))
            query.append(("code_challenge_method", "S256"))
        }
        let location = settings.appleBaseURL + "/auth/authorize?"
            + query.map { PercentEncoding.encode($0.0) + "=" + PercentEncoding.encode($0.1) }.joined(separator: "&")

        var answer = AuthPages.redirect(302, to: location)
        let stale = settings.loginCookies(in: head)
        if stale.count >= AuthSettings.maximumLoginCookies {
            for name in stale { answer.extraFields.append(("Set-Cookie", SetCookie.clearLoginState(name: name, settings: settings))) }
        }
        answer.extraFields.append(("Set-Cookie", SetCookie.loginState(
            name: cookieName, value: sealed, maxAge: AuthSettings.loginStateSeconds, settings: settings)))
        request.logger.info("login started", metadata: ["reason": "redirect_to_apple", "pkce": "\(verifier != nil)"])
        return answer
    }

    /// `POST {prefix}/callback`: the login this sign-in started, finished (`CallbackFlow`).
    func callback(_ request: EndpointRequest, completion: @escaping (LocalResponse) -> Void) {
        CallbackFlow(settings: settings, apple: apple, metrics: metrics, request: request, completion: completion).start()
    }

    /// What goes to Apple as `nonce`: SHA-256 hex of the raw nonce kept in the state cookie.
    static func nonceHash(_ nonce: String) -> String { SHA256.hexDigest(Array(nonce.utf8)) }
}

/// The web sign-in's names, which the callback and the other endpoints' pages use too.
extension AuthSettings {
    var loginPath: String { prefix + "/login" }

    func loginCookieName(forState state: String) -> String {
        loginCookiePrefix + String(SHA256.hexDigest(Array(state.utf8)).prefix(12))
    }

    /// Names of the login-state cookies the request carries.
    func loginCookies(in head: HTTPRequestHead) -> [String] {
        let prefix = Array(loginCookiePrefix.utf8)
        var names: [String] = []
        head.withView { view in
            CookieHeader.forEachPair(in: view) { name, _, _ in
                let bytes = view.bytes[name]
                if name.count > prefix.count, bytes.starts(with: prefix) {
                    names.append(String(decoding: bytes, as: UTF8.self))
                }
                return true
            }
        }
        return names
    }
}
