import Foundation
import SidecarHTTP

/// Reads `sidecar.yaml` into `Config`: walks the declared sections (`ConfigSection`), the
/// entries of `upstreams`, `rules` and `sites` each as its declared template, and checks the
/// rules between keys.
///
/// Reading a key makes it known; values that fail are reported by the reader and the key
/// falls back to its default so that later rules still run and every error is collected.
struct ConfigSchema {
    let reader: ConfigReader
    let file: String
    let environment: [String: String]
    let baseDirectory: String
    var warnings: [ConfigWarning] = []

    init(reader: ConfigReader, file: String, environment: [String: String], baseDirectory: String) {
        self.reader = reader
        self.file = file
        self.environment = environment
        self.baseDirectory = baseDirectory
    }

    mutating func read() -> Config? {
        let root = reader.root
        var context = ParseContext(baseDirectory: baseDirectory, environment: environment)
        let topLevel = root.read(Config.TopLevel.self, context: context)
        checkProxyProtocol(root, topLevel)
        let tlsSection = root.section("tls")
        let tls = readTLS(tlsSection, context: context)
        let endpoints = root.read(Config.Endpoints.self, context: context)
        let publicURL = endpoints.publicURL
        context.publicURL = publicURL
        let acme = readACME(tlsSection, context: context, listen: topLevel.listen)
        let upstream = endpoints.upstreamServers.first?.target
        let upstreamTLS = readUpstreamTLS(root, key: "upstream_tls", upstream: upstream)
        let upstreamHealthCheck = root.section("upstream_health_check").read(Config.HealthCheck.self, context: context)
        let routes = root.section("routes").read(Config.Routes.self, context: context)
        let appleSection = root.section("apple")
        let apple = readApple(appleSection, context: context)
        let appleTransfer = appleSection.section("transfer").read(Config.AppleTransfer.self, context: context)
        let session = readSession(root.section("session"), context: context)
        let access = root.section("access").read(Config.Access.self, context: context)
        let headers = readHeaders(root.section("headers"), context: context)
        let assertion = readAssertion(root.section("assertion"), context: context)
        let notifications = root.section("notifications").read(Config.Notifications.self, context: context)
        let revocations = readRevocations(root.section("revocations"), context: context)
        let admin = root.section("admin").read(Config.Admin.self, context: context)
        let users = readUsers(root.section("users"), context: context, store: revocations.store)
        let log = root.section("log").read(Config.Log.self, context: context)
        let limitsSection = root.section("limits")
        var limits = limitsSection.read(Config.Limits.self, context: context)
        limits.maxConnectionsIsDefault = !limitsSection.contains("max_connections")
        let pages = root.section("pages").read(Config.Pages.self, context: context)
        let tracing = readTracing(root.section("tracing"), context: context)

        context.identityHeaders = headers.strippedIdentityHeaders
        let upstreams = readUpstreams(root, topLevel: topLevel, context: context)
        let rules = readRules(root, upstreams: upstreams, access: access, context: context)
        let sites = readSites(
            root, upstreamNames: upstreams.map(\.name), topLevel: topLevel,
            signIn: SiteSignInContext(
                clientIDs: apple.map { $0.clientIDs.isEmpty ? [$0.clientID] : $0.clientIDs } ?? [],
                sessionDomain: session?.domain),
            context: context)
        let paths = readPaths(root.section("paths"), context: context, access: access, rules: rules)

        guard let publicURL, let upstream, let apple, let session else { return nil }
        var config = Config(
            file: file, topLevel: topLevel, tls: tls, acme: acme, publicURL: publicURL, upstream: upstream,
            routes: routes, paths: paths, apple: apple, session: session, access: access, headers: headers,
            assertion: assertion, notifications: notifications, revocations: revocations, admin: admin, log: log,
            limits: limits, pages: pages, tracing: tracing, upstreams: upstreams + sites.upstreams, rules: rules,
            warnings: warnings)
        config.sites = sites.sites
        config.defaultSite = sites.defaultSite
        config.appleTransfer = appleTransfer
        config.users = users
        config.upstreamTLS = upstreamTLS
        config.upstreamServers = endpoints.upstreamServers
        config.upstreamHealthCheck = upstreamHealthCheck
        return config
    }

    // MARK: Sections

    /// `paths.encoded_slashes`; `keep` is accepted with a warning wherever a decision depends
    /// on the path, since an upstream that decodes `%2F` reads another path than was decided on.
    private mutating func readPaths(
        _ section: Section, context: ParseContext, access: Config.Access, rules: [Config.Rule]
    ) -> Config.Paths {
        let paths = section.read(Config.Paths.self, context: context)
        warnUnnormalizedPatterns(rules, access: access, separators: paths.encodedSlashes)
        if paths.encodedSlashes == .keep, !rules.isEmpty || !access.publicPaths.isEmpty {
            warnings.append(ConfigWarning(
                path: "paths.encoded_slashes",
                message: "keep: %2F and %5C are not separators to rules and public_paths, but an upstream that "
                    + "decodes them (WSGI, PHP, Node's static servers) reads another path than was decided on; "
                    + "use reject (the default) or decode unless the upstream keeps them encoded"))
        }
        return paths
    }

    private mutating func readTracing(_ section: Section, context: ParseContext) -> Config.Tracing {
        let tracing = section.read(Config.Tracing.self, context: context)
        if tracing.otlpCAFile != nil, let endpoint = tracing.otlpEndpoint, !endpoint.isHTTPS {
            warnings.append(ConfigWarning(path: "tracing.otlp_ca_file",
                                          message: "applies to an https:// otlp_endpoint only; ignored for \(endpoint.origin)"))
        } else if tracing.otlpCAFile != nil, !section.contains("otlp_endpoint") {
            warnings.append(ConfigWarning(path: "tracing.otlp_ca_file", message: "applies to an otlp_endpoint only; none is set"))
        }
        return tracing
    }

    /// On, every connection must come from a proxy in `trusted_proxies`: with none listed, or
    /// on a unix socket (whose peers have no address), nothing could ever connect.
    private func checkProxyProtocol(_ root: Section, _ topLevel: Config.TopLevel) {
        guard topLevel.proxyProtocol else { return }
        if topLevel.trustedProxies.isEmpty {
            reader.report(.invalidValue, "proxy_protocol", at: root.location(of: "proxy_protocol"),
                          "true with no trusted_proxies: a PROXY header is accepted only from a proxy listed there, "
                          + "so every connection would be refused (list the load balancer's addresses)")
        } else if case .unix = topLevel.listen {
            reader.report(.invalidValue, "proxy_protocol", at: root.location(of: "proxy_protocol"),
                          "true on a unix socket listener: its peers have no address in trusted_proxies, "
                          + "so every connection would be refused")
        }
    }

    private func readTLS(_ tls: Section, context: ParseContext) -> Config.TLS? {
        let files = tls.read(Config.TLSFiles.self, context: context)
        let certSet = tls.contains("cert_file"), keySet = tls.contains("key_file")
        if certSet != keySet {
            tls.requireMissing(certSet ? "key_file" : "cert_file", because: "tls needs both cert_file and key_file")
        }
        guard let certFile = files.certFile, let keyFile = files.keyFile else { return nil }
        return Config.TLS(certFile: certFile, keyFile: keyFile)
    }

    /// `revocations.*`, with a warning for each key the store ignores.
    private mutating func readRevocations(_ section: Section, context: ParseContext) -> Config.Revocations {
        let revocations = section.read(Config.Revocations.self, context: context)
        let store = revocations.store
        let isRedis = store.isRedis
        if isRedis && section.contains("max_single_use_keys") {
            warnings.append(ConfigWarning(path: "revocations.max_single_use_keys",
                                          message: "applies to the memory and file stores only; Redis expires each key itself"))
        }
        if !isRedis {
            for key in ["password", "key_prefix", "ca_file"] where section.contains(key) {
                warnings.append(ConfigWarning(path: "revocations.\(key)", message: "applies to a redis:// or rediss:// store only; ignored for \(store)"))
            }
        }
        if isRedis && !store.usesTLS && section.contains("ca_file") {
            warnings.append(ConfigWarning(path: "revocations.ca_file", message: "applies to rediss:// only; ignored for a plain redis:// store"))
        }
        let behindSentinel = if case .redis(let address) = store { address.masterName != nil } else { false }
        if !behindSentinel && section.contains("sentinel_password") {
            warnings.append(ConfigWarning(path: "revocations.sentinel_password",
                                          message: "applies to a redis+sentinel:// or rediss+sentinel:// store only; ignored for \(store)"))
        }
        for (key, secret) in [("password", revocations.password), ("sentinel_password", revocations.sentinelPassword)]
        where secret?.source == "inline" {
            warnings.append(ConfigWarning(path: "revocations.\(key)", message: "holds a secret inline; prefer env:NAME or file:/path"))
        }
        return revocations
    }

    /// Identity headers are stripped case-insensitively and in their underscore spelling, so
    /// two that read the same there would be one header.
    private func readHeaders(_ section: Section, context: ParseContext) -> Config.Headers {
        let headers = section.read(Config.Headers.self, context: context)
        var seen: [String: String] = [:]
        for (key, name) in zip(Config.Headers.identityKeys, headers.identityHeaders) where name != Config.Headers.notSent {
            let canonical = name.lowercased().replacingOccurrences(of: "_", with: "-")
            if let other = seen[canonical] {
                // Blame the name the operator wrote, never a default they did not: renaming
                // user_id to X-Auth-Email is reported at user_id, saying email must move too.
                if section.contains(key) {
                    reader.report(.conflict, "headers.\(key)", at: section.location(of: key),
                                  "\(quoted(name)) is already used by headers.\(other)")
                } else {
                    reader.report(.conflict, "headers.\(other)", at: section.location(of: other),
                                  "\(quoted(name)) is headers.\(key)'s default name; set headers.\(key) to another name too")
                }
            }
            seen[canonical] = key
        }
        return headers
    }
}
