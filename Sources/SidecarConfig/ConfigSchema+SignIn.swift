import Foundation
import SidecarHTTP

/// `apple`, `session` and `assertion`: keys whose defaults and checks depend on each other
/// and on `public_url`, read one by one.
extension ConfigSchema {
    static let appleBaseURL = "https://appleid.apple.com"

    mutating func readApple(_ apple: Section, publicURL: HTTPURL?) -> Config.Apple? {
        let teamID = apple.required("team_id", Placeholders.teamID)
        let clientID = apple.required("client_id") { Names.bundleID($0, what: "client id (Services ID)") }
        let keyID = apple.required("key_id", Placeholders.keyID)
        let (privateKeyFile, privateKey) = readApplePrivateKey(apple)
        let scopes = apple.list("scopes", default: ["name", "email"]) { scope in
            ["name", "email"].contains(scope) ? .success(scope)
                : .failure(ValueError("unknown scope \(quoted(scope)) (Apple offers name and email)"))
        }
        if Set(scopes).count != scopes.count {
            reader.report(.invalidValue, "apple.scopes", at: apple.location(of: "scopes"), "lists a scope twice")
        }
        let nativeAudiences = apple.list("native_audiences", default: []) { Names.bundleID($0, what: "bundle id") }
        let baseURL = readAppleBaseURL(apple)
        let caFile = apple.optional("ca_file", Parse.readableFile(baseDirectory: baseDirectory))
        let jwksRefresh = apple.value("jwks_refresh", default: .hours(1), Parse.positiveDuration)
        let clientSecretTTL = apple.value("client_secret_ttl", default: .hours(1)) { text in
            Parse.positiveDuration(text).flatMap { ttl in
                ttl <= .days(180) ? .success(ttl)
                    : .failure(ValueError("\(quoted(text)) is longer than Apple's maximum of 180d"))
            }
        }
        let leeway = apple.value("leeway", default: .seconds(60)) { text in
            Parse.duration(text).flatMap { span in
                span <= .minutes(10) ? .success(span)
                    : .failure(ValueError("\(quoted(text)) is too lenient a clock skew (at most 10m)"))
            }
        }
        let pkce = apple.bool("pkce", default: true)
        let nativeRequireNonce = apple.bool("native_require_nonce", default: false)
        let androidPackages = apple.list("android_packages", default: []) { Names.androidPackage($0) }
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

        guard let teamID, let clientID, let keyID, let privateKey else { return nil }
        return Config.Apple(
            teamID: teamID, clientID: clientID, keyID: keyID, privateKeyFile: privateKeyFile,
            privateKey: privateKey, scopes: scopes, nativeAudiences: nativeAudiences, baseURL: baseURL,
            caFile: caFile, jwksRefresh: jwksRefresh, clientSecretTTL: clientSecretTTL, leeway: leeway,
            pkce: pkce, nativeRequireNonce: nativeRequireNonce, androidPackages: androidPackages)
    }

    /// Exactly one of `private_key_file` and `private_key` (which may be `env:`/`file:`).
    func readApplePrivateKey(_ apple: Section) -> (file: String?, key: Secret?) {
        apple.declare("private_key_file", "private_key")
        switch (apple.contains("private_key_file"), apple.contains("private_key")) {
        case (true, true):
            reader.report(.conflict, "apple.private_key", at: apple.location(of: "private_key"),
                          "set either apple.private_key_file or apple.private_key, not both")
            return (nil, nil)
        case (false, true):
            let key = apple.optional("private_key") { text in
                Placeholders.appleKey(text).flatMap {
                    Secret.resolve($0, environment: environment, baseDirectory: baseDirectory)
                }.flatMap { key in
                    AppleSigningKey.check(key, named: key.source == "inline" ? "the inline key" : key.source)
                }
            }
            return (nil, key)
        case (true, false):
            var path: String?
            let key = apple.optional("private_key_file") { text in
                Parse.path(baseDirectory: baseDirectory)(text).flatMap(Placeholders.appleKey).flatMap { resolved in
                    path = resolved
                    return FilePath.contents(resolved, limit: 64 * 1024)
                        .map { Secret(bytes: $0, source: "file:\(resolved)") }
                        .flatMap { AppleSigningKey.check($0, named: text) }
                }
            }
            return (path, key)
        case (false, false):
            apple.requireMissing("private_key_file", because: "or apple.private_key: the .p8 key that signs client secrets")
            return (nil, nil)
        }
    }

    func readAppleBaseURL(_ apple: Section) -> HTTPURL {
        let fallback = HTTPURL(scheme: "https", host: "appleid.apple.com", port: 443, path: "", query: "")
        return apple.value("base_url", default: fallback) { text in
            HTTPURL.parse(text, allowPath: true, allowQuery: false).flatMap { url in
                url.isHTTPS || url.isLoopback ? .success(url)
                    : .failure(ValueError("\(quoted(text)) must be https unless its host is loopback"))
            }
        }
    }

    mutating func readSession(_ session: Section, publicURL: HTTPURL?) -> Config.Session? {
        let secure = publicURL.map { $0.isHTTPS || $0.isLoopback } ?? true
        let domain = session.optional("domain") { text -> Result<String, ValueError> in
            var lower = text.lowercased()
            if lower.hasPrefix(".") { lower.removeFirst() }
            guard HostName.isValidDNSName(lower), !lower.hasSuffix(".") else {
                return .failure(ValueError("invalid cookie domain \(quoted(text)) (e.g. example.com)"))
            }
            if let host = publicURL?.host, host != lower, !host.hasSuffix("." + lower) {
                return .failure(ValueError("public_url's host \(quoted(host)) is not within \(quoted(lower)): browsers would refuse the cookie"))
            }
            return .success(lower)
        }
        // A Domain rules out the __Host- prefix; __Secure- keeps the "set only over https" guarantee.
        // (Every public_url that loads is secure, as plain http is refused off loopback.)
        let defaultName = !secure ? "sidecar" : session.contains("domain") ? "__Secure-sidecar" : "__Host-sidecar"
        let cookieName = session.value("cookie_name", default: defaultName) { text in
            Names.cookieName(text).flatMap { name in
                name.hasPrefix("__Host-") && session.contains("domain")
                    ? .failure(ValueError("a __Host- cookie cannot have a Domain; drop session.domain or the prefix", kind: .conflict))
                    : .success(name)
            }
        }
        let lifetime = session.value("lifetime", default: .days(7), Parse.positiveDuration)
        let idleTimeout = session.value("idle_timeout", default: .hours(24), Parse.positiveDuration)
        // A default must never make a valid explicit setting fail: refresh_after adapts to a
        // short idle_timeout; only an explicit refresh_after can conflict with it.
        let refreshAfter = session.value("refresh_after", default: Self.defaultRefreshAfter(idleTimeout: idleTimeout),
                                         Parse.positiveDuration)
        let revalidate = session.value("revalidate", default: .hours(24), Parse.duration)
        if session.contains("refresh_after"), refreshAfter >= idleTimeout {
            let origin = session.contains("idle_timeout") ? "" : ", its default"
            reader.report(.conflict, "session.refresh_after", at: session.location(of: "refresh_after"),
                          "must be shorter than session.idle_timeout (\(idleTimeout)\(origin)), or active sessions would expire")
        }
        // Only an idle_timeout the operator chose can be pointless; the default one simply
        // yields to a shorter explicit lifetime.
        if session.contains("idle_timeout"), idleTimeout > lifetime {
            let origin = session.contains("lifetime") ? "" : ", its default"
            warnings.append(ConfigWarning(path: "session.idle_timeout",
                                          message: "longer than session.lifetime (\(lifetime)\(origin)): it never takes effect"))
        }
        let cacheEntries = session.value(
            "cache_entries", default: Config.Session.defaultCacheEntries, Parse.integer(in: 16...(1 << 22)))
        let secrets = readSessionSecrets(session)
        guard let secrets else { return nil }
        return Config.Session(
            cookieName: cookieName, domain: domain, secure: secure, lifetime: lifetime, idleTimeout: idleTimeout,
            refreshAfter: refreshAfter, revalidate: revalidate.isZero ? nil : revalidate, secrets: secrets,
            cacheEntries: cacheEntries)
    }

    /// 1h, or half of `idle_timeout` when that is shorter: a session in use is re-sealed well
    /// before its idle deadline, however short that is.
    static func defaultRefreshAfter(idleTimeout: TimeSpan) -> TimeSpan {
        min(.hours(1), TimeSpan(milliseconds: idleTimeout.milliseconds / 2))
    }

    /// Each secret must be base64 (standard or URL-safe) of at least 32 bytes, as printed by
    /// `sidecar secret`; raw passphrases are refused because their entropy is unknown.
    mutating func readSessionSecrets(_ session: Section) -> [Secret]? {
        guard session.contains("secrets") else {
            session.requireMissing("secrets", because: "e.g. [file:/etc/sidecar/cookie-secret], a file of mode 0640 "
                + "made with `sidecar secret`, or [env:SIDECAR_COOKIE_SECRET]")
            return nil
        }
        var failed = false
        let secrets = session.optionalList("secrets") { text -> Result<Secret, ValueError> in
            let result = Secret.resolve(text, environment: environment, baseDirectory: baseDirectory).mapError { error in
                // A cookie secret is the one secret the operator makes: say how.
                text.hasPrefix("env:") && error.kind == .unresolvable
                    ? ValueError(error.message + " (make one with `sidecar secret`, then export it)", kind: .unresolvable)
                    : error
            }.flatMap { secret in
                let trimmed = secret.string.trimmingCharacters(in: .whitespaces)
                guard let decoded = Base64.decode(trimmed) else {
                    return Result<Secret, ValueError>.failure(ValueError(
                        "secret from \(secret.source) is not base64 (generate one with `sidecar secret`)"))
                }
                guard decoded.count >= 32 else {
                    return .failure(ValueError(
                        "secret from \(secret.source) decodes to \(decoded.count) bytes; at least 32 are needed (generate one with `sidecar secret`)"))
                }
                return .success(Secret(bytes: decoded, source: secret.source))
            }
            if case .failure = result { failed = true }
            return result
        }
        guard let secrets, !failed else { return nil }
        guard !secrets.isEmpty else {
            reader.report(.invalidValue, "session.secrets", at: session.location(of: "secrets"),
                          "needs at least one secret (generate one with `sidecar secret`)")
            return nil
        }
        if Set(secrets.map(\.bytes)).count != secrets.count {
            warnings.append(ConfigWarning(path: "session.secrets", message: "lists the same secret more than once"))
        }
        if secrets.contains(where: { $0.source == "inline" }) {
            warnings.append(ConfigWarning(path: "session.secrets",
                                          message: "holds a secret inline; prefer env:NAME or file:/path"))
        }
        return secrets
    }

    mutating func readAssertion(_ assertion: Section, publicURL: HTTPURL?) -> Config.Assertion {
        let enabled = assertion.bool("enabled", default: false)
        var key: Secret?
        let keyFile = assertion.optional("private_key_file") { text in
            Parse.path(baseDirectory: baseDirectory)(text).flatMap { path in
                // Generated at start (and written there) when the file does not exist yet; an
                // existing one must be a P-256 key, checked here so `check` names its line.
                guard FilePath.exists(path) else {
                    return FilePath.exists(FilePath.directory(of: path)) ? .success(path)
                        : .failure(ValueError("directory of \(quoted(path)) does not exist", kind: .unresolvable))
                }
                return FilePath.contents(path, limit: 64 * 1024)
                    .map { Secret(bytes: $0, source: "file:\(path)") }
                    .flatMap { AppleSigningKey.check($0, named: text, for: .assertion) }
                    .map { checked in
                        key = checked
                        return path
                    }
            }
        }
        if enabled {
            if keyFile == nil && !assertion.contains("private_key_file") {
                warnings.append(ConfigWarning(
                    path: "assertion.private_key_file",
                    message: "not set: assertions are signed with a key generated at start and lost on restart "
                        + "(upstreams must fetch jwks.json again, and replicas would each have their own key)"))
            } else if let keyFile, key == nil {
                warnings.append(ConfigWarning(
                    path: "assertion.private_key_file",
                    message: "\(quoted(keyFile)) does not exist yet: `run` generates a P-256 key and writes it there (mode 0600)"))
            }
        }
        return Config.Assertion(
            enabled: enabled, privateKeyFile: keyFile, privateKey: key,
            audience: assertion.value("audience", default: publicURL?.origin ?? "", Parse.nonEmpty),
            ttl: assertion.value("ttl", default: .seconds(60), Parse.positiveDuration))
    }
}
