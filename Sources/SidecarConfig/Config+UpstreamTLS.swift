/// TLS to an `https://` upstream: `upstream_tls` for the top-level upstream, `tls` in an entry
/// of `upstreams`. Each upstream has its own; none inherits another's (a client key meant for
/// one server is never offered to another).
extension Config {
    public struct UpstreamTLS: Sendable, Equatable, ConfigSection {
        /// PEM CA certificates that alone are trusted; nil: the system's trust store.
        public var caFile: String?
        /// The name sent by SNI and verified; nil: the URL's host.
        public var serverName: String?
        public var clientCertificate: String?
        public var clientKey: String?
        public var verify = true

        public init() {}

        static let path = "upstream_tls"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.caFile, "ca_file", "PEM CA certificates trusted for the upstream instead of the system's "
                      + "store; reloaded on SIGHUP") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .optional(\.serverName, "server_name", "the name sent by SNI and verified; unset: the URL's host") { text, _ in
                HostName.normalized(text).map { .success($0) }
                    ?? .failure(ValueError("invalid server name \(quoted(text)) (a host name or IP address)"))
            },
            .optional(\.clientCertificate, "client_certificate",
                      "PEM chain presented to an upstream that asks (mutual TLS); with client_key") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .optional(\.clientKey, "client_key", "its unencrypted PEM private key") { text, context in
                Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
            .bool(\.verify, "verify", "false: the certificate is not checked at all (warned at every start)"),
        ]

        /// Any key set: only an `https://` upstream reads them.
        var isSet: Bool { self != UpstreamTLS() }
    }
}

extension ConfigSchema {
    /// Reads an upstream's TLS section (at `key` of `parent`) and checks it against the URL:
    /// its keys belong to an `https://` upstream, a certificate comes with its key, and turning
    /// verification off is said at every start.
    mutating func readUpstreamTLS(_ parent: Section, key: String, upstream: Upstream?) -> Config.UpstreamTLS {
        let section = parent.section(key)
        let tls = section.read(Config.UpstreamTLS.self, context: ParseContext(baseDirectory: baseDirectory, environment: environment))
        let path = section.path
        guard let upstream, tls.isSet else { return tls }
        guard upstream.isTLS else {
            reader.report(.invalidValue, path, at: parent.location(of: key),
                          "\(path) applies to an https:// upstream only (this one is \(upstream))")
            return tls
        }
        if (tls.clientCertificate == nil) != (tls.clientKey == nil) {
            let missing = tls.clientCertificate == nil ? "client_certificate" : "client_key"
            section.requireMissing(missing, because: "mutual TLS needs both client_certificate and client_key")
        }
        if !tls.verify {
            warnings.append(ConfigWarning(
                path: Section.join(path, "verify"),
                message: "false: the upstream's certificate is not verified, so anyone between the sidecar and "
                    + "\(upstream) can read and change its traffic (the identity headers included)"))
        }
        return tls
    }
}
