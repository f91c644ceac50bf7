import Foundation
import SidecarHTTP

/// `apple`, `session` and `assertion`, whose defaults and checks depend on each other and on
/// `public_url`: each walked as declared, then derived and checked together.
extension ConfigSchema {
    static let appleBaseURL = "https://appleid.apple.com"

    mutating func readApple(_ apple: Section, context: ParseContext) -> Config.Apple? {
        let publicURL = context.publicURL
        var identity = apple.read(Config.AppleIdentity.self, over: Config.AppleIdentity(), context: context,
                                  skipping: ["private_key_file", "private_key"])
        if Set(identity.clientIDs).count != identity.clientIDs.count {
            reader.report(.invalidValue, "apple.client_id", at: apple.location(of: "client_id"), "lists a Services ID twice")
        }
        readApplePrivateKey(apple, into: &identity, context: context)
        let options = apple.read(Config.AppleOptions.self, context: context)
        let (scopes, nativeAudiences, androidPackages) = (options.scopes, options.nativeAudiences, options.androidPackages)
        let (baseURL, nativeRequireNonce) = (options.baseURL, options.nativeRequireNonce)
        if Set(scopes).count != scopes.count {
            reader.report(.invalidValue, "apple.scopes", at: apple.location(of: "scopes"), "lists a scope twice")
        }
        if Set(androidPackages).count != androidPackages.count {
            reader.report(.invalidValue, "apple.android_packages", at: apple.location(of: "android_packages"),
                          "lists a package twice")
        }

        // Only a value the operator wrote warns: the default stays quiet (`check` shows
        // "nonce optional" on its native line either way).
        if !nativeAudiences.isEmpty && !nativeRequireNonce && apple.contains("native_require_nonce") {
            warnings.append(ConfigWarning(
                path: "apple.native_require_nonce",
                message: "false while native_audiences are configured: a native identity token can be replayed until it expires"))
        }
        if let publicURL, baseURL.description == Self.appleBaseURL,
           !publicURL.isHTTPS || publicURL.isLoopback || HostName.isIPLiteral(publicURL.host) {
            warnings.append(ConfigWarning(
                path: "public_url",
                message: "\(publicURL.origin) could never be registered with Apple (Apple requires https and a "
                    + "domain name, not an IP or localhost); set apple.base_url to an emulator to test locally"))
        }

        if !baseURL.isHTTPS {
            warnings.append(ConfigWarning(
                path: "apple.base_url",
                message: "\(baseURL.origin) is plain http (allowed only because the host is loopback): "
                    + "use it for an emulator in tests, never for Apple"))
        }

        guard let teamID = identity.teamID, let clientID = identity.clientIDs.first, let keyID = identity.keyID,
              let privateKey = identity.privateKeyFile ?? identity.privateKey else { return nil }
        var config = Config.Apple(
            teamID: teamID, clientID: clientID, keyID: keyID, privateKeyFile: identity.privateKeyPath,
            privateKey: privateKey, scopes: scopes, nativeAudiences: nativeAudiences, baseURL: baseURL,
            caFile: options.caFile, jwksRefresh: options.jwksRefresh, clientSecretTTL: options.clientSecretTTL,
            leeway: options.leeway, pkce: options.pkce, nativeRequireNonce: nativeRequireNonce, androidPackages: androidPackages)
        config.clientIDs = identity.clientIDs
        return config
    }

    /// Exactly one of `private_key_file` and `private_key` (which may be `env:`/`file:`): only
    /// the one set is read.
    private func readApplePrivateKey(_ apple: Section, into identity: inout Config.AppleIdentity, context: ParseContext) {
        apple.declare("private_key_file", "private_key")
        switch (apple.contains("private_key_file"), apple.contains("private_key")) {
        case (true, true):
            reader.report(.conflict, "apple.private_key", at: apple.location(of: "private_key"),
                          "set either apple.private_key_file or apple.private_key, not both")
        case (false, true):
            apple.read("private_key", into: &identity, context: context)
        case (true, false):
            apple.read("private_key_file", into: &identity, context: context)
        case (false, false):
            apple.requireMissing("private_key_file", because: "or apple.private_key: the .p8 key that signs client secrets")
        }
    }

    mutating func readSession(_ section: Section, context: ParseContext) -> Config.Session? {
        var session = section.read(Config.Session.self, context: context)
        session.secure = context.publicURL.map { $0.isHTTPS || $0.isLoopback } ?? true
        // A Domain rules out the __Host- prefix; __Secure- keeps the "set only over https" guarantee.
        // (Every public_url that loads is secure, as plain http is refused off loopback.)
        if !section.contains("cookie_name") {
            session.cookieName = !session.secure ? "sidecar" : section.contains("domain") ? "__Secure-sidecar" : "__Host-sidecar"
        } else if session.cookieName.hasPrefix("__Host-"), section.contains("domain"),
                  !reader.hasErrors(at: "session.cookie_name") {
            reader.report(.conflict, "session.cookie_name", at: section.location(of: "cookie_name"),
                          "a __Host- cookie cannot have a Domain; drop session.domain or the prefix")
        }
        // A default must never make a valid explicit setting fail: refresh_after adapts to a
        // short idle_timeout; only an explicit refresh_after can conflict with it.
        let (lifetime, idleTimeout) = (session.lifetime, session.idleTimeout)
        if !section.contains("refresh_after") {
            session.refreshAfter = Self.defaultRefreshAfter(idleTimeout: idleTimeout)
        } else if session.refreshAfter >= idleTimeout {
            let origin = section.contains("idle_timeout") ? "" : ", its default"
            reader.report(.conflict, "session.refresh_after", at: section.location(of: "refresh_after"),
                          "must be shorter than session.idle_timeout (\(idleTimeout)\(origin)), or active sessions would expire")
        }
        // Only an idle_timeout the operator chose can be pointless; the default one simply
        // yields to a shorter explicit lifetime.
        if section.contains("idle_timeout"), idleTimeout > lifetime {
            let origin = section.contains("lifetime") ? "" : ", its default"
            warnings.append(ConfigWarning(path: "session.idle_timeout",
                                          message: "longer than session.lifetime (\(lifetime)\(origin)): it never takes effect"))
        }
        guard checkSessionSecrets(section, session.secrets) else { return nil }
        return session
    }

    /// 1h, or half of `idle_timeout` when that is shorter: a session in use is re-sealed well
    /// before its idle deadline, however short that is.
    static func defaultRefreshAfter(idleTimeout: TimeSpan) -> TimeSpan {
        min(.hours(1), TimeSpan(milliseconds: idleTimeout.milliseconds / 2))
    }

    /// Whether the secrets can seal: each one read (else its error is reported already) and at
    /// least one; repeats and inline secrets are warned about.
    private mutating func checkSessionSecrets(_ section: Section, _ secrets: [Secret]) -> Bool {
        guard section.contains("secrets"), !reader.hasErrors(at: "session.secrets") else { return false }
        guard !secrets.isEmpty else {
            reader.report(.invalidValue, "session.secrets", at: section.location(of: "secrets"),
                          "needs at least one secret (generate one with `sidecar secret`)")
            return false
        }
        if Set(secrets.map(\.bytes)).count != secrets.count {
            warnings.append(ConfigWarning(path: "session.secrets", message: "lists the same secret more than once"))
        }
        if secrets.contains(where: { $0.source == "inline" }) {
            warnings.append(ConfigWarning(path: "session.secrets",
                                          message: "holds a secret inline; prefer env:NAME or file:/path"))
        }
        return true
    }

    mutating func readAssertion(_ section: Section, context: ParseContext) -> Config.Assertion {
        var assertion = section.read(Config.Assertion.self, context: context)
        if !section.contains("audience") { assertion.audience = context.publicURL?.origin ?? "" }
        guard assertion.enabled else { return assertion }
        if assertion.privateKeyFile == nil && !section.contains("private_key_file") {
            warnings.append(ConfigWarning(
                path: "assertion.private_key_file",
                message: "not set: assertions are signed with a key generated at start and lost on restart "
                    + "(upstreams must fetch jwks.json again, and replicas would each have their own key)"))
        } else if let keyFile = assertion.privateKeyFile, assertion.privateKey == nil {
            warnings.append(ConfigWarning(
                path: "assertion.private_key_file",
                message: "\(quoted(keyFile)) does not exist yet: `run` generates a P-256 key and writes it there (mode 0600)"))
        }
        return assertion
    }
}
