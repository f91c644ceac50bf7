import SidecarApple
import SidecarConfig
import SidecarCrypto
import SidecarHTTP

/// Why the sign-in settings could not be built from a configuration (a config error: exit 1).
public struct AuthSetupError: Error, CustomStringConvertible {
    public let description: String
}

/// Everything the sign-in flow needs, derived once from `Config` (and again on reload):
/// immutable, shared by every worker. Mutable cross-worker state lives in `AuthShared`.
public final class AuthSettings: Sendable {
    let shared: AuthShared

    // Where we are.
    let prefix: String
    let publicOrigin: String
    let redirectURI: String
    let redirects: RedirectPolicy
    /// The top-level sign-in and each site's own (`sites.<name>.public_url`).
    let realms: SignInRealms

    // Apple.
    let appleEndpoint: AppleEndpoint
    /// `apple.base_url` without a trailing slash: the authorize URL's base and the `iss`.
    let appleBaseURL: String
    let appleCAFile: String?
    /// The web flow's Services ID: logins ask for it, the callback's token must be for it.
    let clientID: String
    /// Every Services ID (`clientID` first): notifications and relayed Android tokens may name any.
    let clientIDs: [String]
    let scopes: [String]
    let pkce: Bool
    let secrets: ClientSecretProvider
    let verifier: AppleIDTokenVerifier
    let jwksRefreshSeconds: Int64

    // Native apps.
    /// `apple.native_audiences`: the bundle ids whose identity tokens `/native` accepts; empty
    /// means the native endpoints do not exist (404).
    let nativeAudiences: [String]
    /// Like `verifier`, but `aud` ∈ `nativeAudiences`.
    let nativeVerifier: AppleIDTokenVerifier
    let nativeRequireNonce: Bool
    let nativeNonces: NativeNonceSealer
    /// `apple.android_packages`: with any, the relay endpoint exists and `/native`
    /// also accepts web-flow tokens (`aud` = the Services ID) that carry a sidecar nonce.
    let androidPackages: [String]
    /// `{public_url}{prefix}/android/callback`: the relay's redirect URI, registered at Apple.
    let androidRelayURI: String

    /// Whether `/native` and its nonce and refresh endpoints exist.
    var nativeEnabled: Bool { !nativeAudiences.isEmpty || !androidPackages.isEmpty }

    // Sessions.
    let sessions: SessionSealer
    let loginStates: LoginStateSealer
    let cookieName: String
    let cookieNameBytes: [UInt8]
    /// `__Secure-sidecar-login-` or `sidecar-login-`: followed by a short hash of the state.
    let loginCookiePrefix: String
    let secureCookies: Bool
    let lifetime: Int64
    let idleTimeout: Int64
    let refreshAfter: Int64
    /// `session.revalidate` in seconds; 0 when off.
    let revalidateSeconds: Int64
    /// `session.cache_entries`: the size of each worker's `SessionCache`.
    let sessionCacheEntries: Int

    // Policy and headers.
    let access: AccessRules
    let headers: IdentityHeaderNames
    let passCookie: Bool
    let logEmails: Bool
    let maxBodyBytes: Int
    /// `limits.sign_in_rate`: requests per client address to the sign-in endpoints.
    let signInRate: SignInRate

    /// The signed identity assertion; nil when `assertion.enabled` is false.
    let assertion: AssertionSettings?
    /// What settling the assertion key did (generated, written, rotated), for `run`'s log.
    public var assertionNotes: [String] { assertion?.notes ?? [] }
    /// For `sidecar check`: the assertion's key id, audience and lifetime; nil when off.
    public var assertionSummary: String? {
        assertion.map { "ES256, kid \($0.signer.key.keyID), aud \($0.signer.audience), ttl \($0.signer.ttl)s" }
    }

    /// Apple's server-to-server events and where they are forwarded.
    let lifecycle: LifecycleSettings

    /// The sign-in failure, signed-out and account pages; the same renderer as
    /// `ProxyOptions.pages`.
    let pages: PageRenderer
    /// Each site's own pages; nil when no site has any.
    let sitePages: SitePages?

    /// The pages of the request's site.
    func pages(for head: HTTPRequestHead) -> PageRenderer { sitePages?.pages(for: head).renderer ?? pages }

    /// A worker's own copy: the same values and the same shared parts (store, sealers, keys),
    /// in an object of its own, with its own copies of the byte arrays every request reads.
    /// The request path retains and releases these objects (a few times per request); on an
    /// object all workers share, each of those atomic writes takes the cache line from the
    /// core that wrote it last, a cost that grows with the number of workers
    /// (Benchmarks/RESULTS.md, "Objects every worker wrote").
    init(workerCopyOf other: AuthSettings) {
        shared = other.shared
        prefix = other.prefix
        publicOrigin = other.publicOrigin
        redirectURI = other.redirectURI
        redirects = other.redirects
        realms = other.realms
        appleEndpoint = other.appleEndpoint
        appleBaseURL = other.appleBaseURL
        appleCAFile = other.appleCAFile
        clientID = other.clientID
        clientIDs = other.clientIDs
        scopes = other.scopes
        pkce = other.pkce
        secrets = other.secrets
        verifier = other.verifier
        jwksRefreshSeconds = other.jwksRefreshSeconds
        nativeAudiences = other.nativeAudiences
        nativeVerifier = other.nativeVerifier
        nativeRequireNonce = other.nativeRequireNonce
        nativeNonces = other.nativeNonces
        androidPackages = other.androidPackages
        androidRelayURI = other.androidRelayURI
        sessions = other.sessions
        loginStates = other.loginStates
        cookieName = other.cookieName
        cookieNameBytes = other.cookieNameBytes.ownStorageCopy()
        loginCookiePrefix = other.loginCookiePrefix
        secureCookies = other.secureCookies
        lifetime = other.lifetime
        idleTimeout = other.idleTimeout
        refreshAfter = other.refreshAfter
        revalidateSeconds = other.revalidateSeconds
        sessionCacheEntries = other.sessionCacheEntries
        access = other.access
        headers = IdentityHeaderNames(workerCopyOf: other.headers)
        passCookie = other.passCookie
        logEmails = other.logEmails
        maxBodyBytes = other.maxBodyBytes
        signInRate = other.signInRate
        assertion = other.assertion
        lifecycle = other.lifecycle
        pages = other.pages
        sitePages = other.sitePages
    }

    /// Login cookies in flight from one browser; more start a fresh set.
    static let maximumLoginCookies = 8
    static let loginStateSeconds: Int64 = 600

    public init(
        config: Config, shared: AuthShared, pages: PageRenderer = .builtIn, sitePages: SitePages? = nil
    ) throws(AuthSetupError) {
        self.shared = shared
        self.pages = pages
        self.sitePages = sitePages
        prefix = config.routes.prefix
        publicOrigin = config.publicURL.origin
        redirectURI = config.redirectURI
        // Every site's host is a place a sign-in may return to (https, port 443, as a bare
        // allowed_redirect_hosts entry).
        redirects = RedirectPolicy(
            publicOrigin: publicOrigin,
            allowedHosts: config.access.allowedRedirectHosts.map(\.description) + config.sites.flatMap(\.hosts))

        let apple = config.apple
        do {
            appleEndpoint = try AppleEndpoint(baseURL: apple.baseURL.description)
        } catch {
            throw AuthSetupError(description: "apple.base_url: \(error)")
        }
        var base = apple.baseURL.description
        while base.hasSuffix("/") { base.removeLast() }
        appleBaseURL = base
        appleCAFile = apple.caFile
        clientID = apple.clientID
        clientIDs = apple.clientIDs.isEmpty ? [apple.clientID] : apple.clientIDs
        scopes = apple.scopes
        pkce = apple.pkce
        let key: P256PrivateKey
        do {
            key = try P256PrivateKey(pem: apple.privateKey.bytes)
        } catch {
            throw AuthSetupError(description: "apple private key (\(apple.privateKey.source)): not a P-256 PKCS#8 PEM key")
        }
        do {
            secrets = try ClientSecretProvider(
                teamID: apple.teamID, keyID: apple.keyID, key: key, audience: base,
                lifetime: apple.clientSecretTTL.seconds, clock: { UnixTime.now() })
        } catch {
            throw AuthSetupError(description: "apple.client_secret_ttl: \(error)")
        }
        verifier = AppleIDTokenVerifier(
            issuer: base, audiences: [apple.clientID], leeway: apple.leeway.seconds)
        realms = SignInRealms(config: config, issuer: base, leeway: apple.leeway.seconds)
        jwksRefreshSeconds = max(60, apple.jwksRefresh.seconds)
        nativeAudiences = apple.nativeAudiences
        androidPackages = apple.androidPackages
        androidRelayURI = publicOrigin + prefix + "/android/callback"
        nativeVerifier = AppleIDTokenVerifier(
            issuer: base, audiences: Set(apple.nativeAudiences + (apple.androidPackages.isEmpty ? [] : clientIDs)),
            leeway: apple.leeway.seconds)
        nativeRequireNonce = apple.nativeRequireNonce

        let session = config.session
        var distinct: [[UInt8]] = []
        for secret in session.secrets where !distinct.contains(secret.bytes) { distinct.append(secret.bytes) }
        do {
            sessions = try SessionSealer(secrets: distinct)
            loginStates = try LoginStateSealer(secrets: distinct)
            nativeNonces = try NativeNonceSealer(secrets: distinct)
        } catch {
            throw AuthSetupError(description: "session.secrets: \(error)")
        }
        cookieName = session.cookieName
        cookieNameBytes = Array(session.cookieName.utf8)
        loginCookiePrefix = session.secure ? "__Secure-sidecar-login-" : "sidecar-login-"
        secureCookies = session.secure
        lifetime = session.lifetime.seconds
        idleTimeout = session.idleTimeout.seconds
        refreshAfter = session.refreshAfter.seconds
        revalidateSeconds = session.revalidate.map { max(1, $0.seconds) } ?? 0
        sessionCacheEntries = session.cacheEntries

        access = AccessRules(config.access)
        headers = IdentityHeaderNames(config.headers)
        passCookie = config.headers.passCookie
        logEmails = config.log.pii
        maxBodyBytes = config.limits.maxBodyBytes
        signInRate = config.limits.signInRate
        lifecycle = try LifecycleSettings(config: config)
        assertion = try AssertionSettings.make(config: config, ring: shared.assertionKeys)
    }
}

extension Array where Element == UInt8 {
    /// The same bytes in storage of their own: a plain copy of an array shares its storage,
    /// and with it the reference count every reader writes.
    func ownStorageCopy() -> [UInt8] {
        withUnsafeBufferPointer { [UInt8]($0) }
    }
}
