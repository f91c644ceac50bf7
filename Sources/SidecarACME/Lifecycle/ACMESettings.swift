import SidecarEvent

/// What `tls.acme` asks for, resolved: the CA, the account, the domains, the key types, the
/// challenge and where things are kept.
public struct ACMESettings: Sendable {
    public enum Challenge: Sendable, Equatable {
        /// HTTP-01 answered on this plain listener (port 80 in production).
        case http01(listen: SocketAddress)
        /// TLS-ALPN-01 answered on the TLS listener itself.
        case tlsALPN01
    }

    public var directoryURL: ACMEURL
    /// Extra trust anchors for the CA's own HTTPS (a private or test CA).
    public var caFile: String?
    public var email: String?
    public var domains: [String]
    public var keyType: CertificateKeyType
    public var challenge: Challenge
    public var binding: ExternalAccountBinding?
    /// The directory of `tls.acme.storage`: the store itself, and the files the listener serves.
    public var storageDirectory: String
    /// `public_url`'s origin: where the HTTP-01 listener sends everything that is not a challenge.
    public var publicOrigin: String

    public init(
        directoryURL: ACMEURL, caFile: String?, email: String?, domains: [String], keyType: CertificateKeyType,
        challenge: Challenge, binding: ExternalAccountBinding?, storageDirectory: String, publicOrigin: String
    ) {
        self.directoryURL = directoryURL
        self.caFile = caFile
        self.email = email
        self.domains = domains
        self.keyType = keyType
        self.challenge = challenge
        self.binding = binding
        self.storageDirectory = storageDirectory
        self.publicOrigin = publicOrigin
    }

    /// The account file's name part: one account per CA.
    public var caHost: String {
        let rest = directoryURL.origin.split(separator: "/").last.map(String.init) ?? "ca"
        return rest.replacingOccurrences(of: ":", with: "_")
    }
}
