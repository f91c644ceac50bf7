import SidecarConfig
import SidecarEvent
import SidecarProxy
import SidecarStore

/// Everything `sidecar run` (at start and on SIGHUP) derives from a configuration file before
/// it serves, and what `sidecar check` validates: one code path, so `check` can never pass a
/// file that `run` refuses, and both refuse it in the same words.
struct ServingConfiguration {
    let config: Config
    let options: ProxyOptions
    /// Loads but probably is not what was meant: `run` logs them.
    let warnings: [String]
    /// The same, each a whole line starting with the file (and the line, where the warning is
    /// about one entry, e.g. of `rules`): what `check` prints.
    let warningLines: [String]
    /// `limits.max_connections` cannot fit the descriptor limit (or, unset, leaves room for
    /// only a few clients): `check` prints it with the warnings; `run` leaves it to `ProxyServer`, which logs it once, after raising the soft limit.
    let descriptorWarning: String?

    /// Why the file cannot be served; each line starts with the file (and, where the config
    /// reader knows them, line, column and key path).
    struct Refusal: Error, CustomStringConvertible {
        let lines: [String]
        var description: String { lines.joined(separator: "\n") }
    }

    /// `--config none`: no file, every setting from `SIDECAR_*` variables.
    static let noFile = "none"

    static func configFile(_ argument: String) -> String? { argument == noFile ? nil : argument }

    /// What messages call the configuration.
    static func label(_ argument: String) -> String { argument == noFile ? "environment" : argument }

    /// Reads `file` (resolving secrets, reading key files and the TLS pair),
    /// and builds the sign-in settings exactly as serving them would.
    static func load(file: String, shared: AuthShared) throws(Refusal) -> ServingConfiguration {
        try load(file: file) { _ throws(Refusal) in shared }
    }

    /// As above, with the shared sign-in state made from the loaded configuration (`run`
    /// opens the store `revocations.store` names once, at start).
    static func load(file: String, shared makeShared: (Config) throws(Refusal) -> AuthShared) throws(Refusal) -> ServingConfiguration {
        let config: Config
        do {
            config = try Config.load(file: configFile(file))
        } catch {
            throw Refusal(lines: error.errors.map(\.description))
        }
        var options = ProxyOptions(config: config)
        do {
            options.pages = try PageRenderer.load(
                templates: config.pages.templates, language: config.pages.language,
                languageOverride: config.pages.languageOverride)
        } catch {
            throw Refusal(lines: error.lines.map { "\($0) (pages.templates in \(label(file)))" })
        }
        if config.sites.contains(where: { $0.pages != nil }) {
            var bySite: [PageRenderer?] = []
            for site in config.sites {
                guard let pages = site.pages else {
                    bySite.append(nil)
                    continue
                }
                do {
                    bySite.append(try PageRenderer.load(
                        templates: pages.templates, language: pages.language, languageOverride: pages.languageOverride))
                } catch {
                    throw Refusal(lines: error.lines.map { "\($0) (sites.\(site.name).pages.templates in \(label(file)))" })
                }
            }
            options.sitePages = SitePages(config, topLevel: options.pages, bySite: bySite)
        }
        var tlsWarnings: [String] = []
        if let acme = config.acme {
            options.scheme = "https"
            if acme.shareViaStore && !config.revocations.store.isRedis {
                throw Refusal(lines: ["\(label(file)): tls.acme.share_via_store: true needs revocations.store to be "
                    + "redis:// or rediss://, which the replicas share (it is \(config.revocations.store))"])
            }
        }
        if let tls = config.tls {
            // The pair is read and checked here, so `check` refuses what `run` could not serve
            // and a reload with a bad pair keeps the one in use.
            do {
                let context = try TLSServerContext(certFile: tls.certFile, keyFile: tls.keyFile, http2: config.http2)
                options.tls = context
                options.scheme = "https"
                if !context.names(host: config.publicURL.host) {
                    tlsWarnings.append("tls.cert_file: \(tls.certFile) does not name \(config.publicURL.host), "
                        + "public_url's host: browsers will refuse the certificate")
                }
                if !config.publicURL.isHTTPS {
                    tlsWarnings.append("tls: set while public_url is \(config.publicURL.origin): browsers are sent to "
                        + "plain http (redirect_uri, cookies without Secure); make public_url https://")
                }
            } catch {
                throw Refusal(lines: ["\(label(file)): \(error)"])
            }
        }
        let shared = try makeShared(config)
        do {
            options.auth = try AuthSettings(config: config, shared: shared, pages: options.pages, sitePages: options.sitePages)
        } catch {
            throw Refusal(lines: ["\(label(file)): \(error)"])
        }
        // Unset, max_connections follows the limit: worth a warning only when few clients fit.
        let limits = DescriptorLimit.current()
        let descriptorWarning = config.limits.maxConnectionsIsDefault
            ? DescriptorLimit.automatic(defaultConnections: config.limits.maxConnections, limits: limits)
                .flatMap { $0.warn ? $0.message : nil }
            : DescriptorLimit.shortfall(maxConnections: config.limits.maxConnections, limits: limits)
        return ServingConfiguration(
            config: config, options: options, warnings: config.warnings.map { warning in warning.line.map { "\(warning) (line \($0))" } ?? warning.description }
                + tlsWarnings,
            warningLines: config.warnings.map { $0.line(file: label(file)) } + tlsWarnings.map { "\(label(file)): warning: \($0)" },
            descriptorWarning: descriptorWarning)
    }
}

extension StoreSpec {
    /// The store `revocations.*` names.
    init(_ revocations: Config.Revocations) {
        switch revocations.store {
        case .memory: self = .memory
        case .file(let path): self = .file(path: path)
        case .redis(let address):
            self = .redis(RedisEndpoint(
                address: address, caFile: revocations.caFile, password: revocations.password?.bytes,
                sentinelPassword: revocations.sentinelPassword?.bytes, keyPrefix: revocations.keyPrefix))
        }
    }
}

extension StoreLimits {
    /// The defaults, with `revocations.max_single_use_keys` when set.
    init(_ revocations: Config.Revocations) {
        self.init()
        if let capacity = revocations.maxSingleUseKeys {
            memoryClaimCapacity = capacity
            fileClaimCapacity = capacity
        }
    }
}
