import Foundation

/// `tls.acme`: the listener's certificate obtained and renewed from an ACME CA (RFC 8555).
extension Config {
    public struct ACME: Sendable, ConfigSection {
        public enum Challenge: String, Sendable, CaseIterable {
            /// RFC 8737, on the TLS listener: needs nothing on port 80 (works behind a redirect there).
            case tlsALPN01 = "tls-alpn-01"
            /// RFC 8555 §8.3, on `http_listen` (port 80).
            case http01 = "http-01"
        }

        public enum KeyType: String, Sendable, CaseIterable {
            case ecdsaP256 = "ecdsa-p256"
            case rsa2048 = "rsa-2048"
        }

        public static let letsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"
        public static let letsEncryptStaging = "https://acme-staging-v02.api.letsencrypt.org/directory"

        /// Contact address given to the CA (expiry notices); nil: none.
        public var email: String?
        /// The CA's directory URL (`letsencrypt` and `letsencrypt-staging` name Let's Encrypt's).
        public var directory = Self.namedDirectory(Self.letsEncrypt)
        /// DNS names the certificate covers; the first names the stored files. Not set in the
        /// file: `public_url`'s host (the schema fills it in, knowing public_url).
        public var domains: [String] = []
        public var challenge = Challenge.tlsALPN01
        /// The plain listener answering HTTP-01 (and redirecting the rest to public_url).
        public var httpListen = ListenAddress.tcp(host: "0.0.0.0", port: 80)
        public var keyType = KeyType.ecdsaP256
        /// Account key, certificates and keys (mode 0600 in a 0700 directory).
        public var storage = "/var/lib/sidecar/acme"
        /// Keep them in `revocations.store` (Redis) instead, shared by every replica.
        public var shareViaStore = false
        /// External Account Binding, for CAs that need it.
        public var eabKeyID: String?
        public var eabHMACKey: Secret?
        /// Trust anchors for the CA's own HTTPS (a private CA), besides the system's.
        public var caFile: String?

        public init() {}

        static let path = "tls.acme"
        static let keys: [ConfigKey<Self>] = [
            .optional(\.email, "email", "contact for the CA's expiry notices (optional)") { text, _ in Names.email(text) },
            .value(\.directory, "directory", "letsencrypt (the default), letsencrypt-staging or any directory URL",
                   Self.parseDirectory),
            .list(\.domains, "domains", "default: public_url's host", Self.parseDomain),
            .value(\.challenge, "challenge", "or http-01; tls-alpn-01 is answered on listen (the CA connects to 443)",
                   Parse.oneOf(Challenge.self)),
            .value(\.httpListen, "http_listen", "http-01 only: answers the CA, redirects all else to public_url") {
                text, context in ListenAddress.parse(text, baseDirectory: context.baseDirectory)
            },
            .value(\.keyType, "key_type", "or rsa-2048: the account and certificate keys", Parse.oneOf(KeyType.self)),
            .value(\.storage, "storage", "account key, certificate, key (0600 files, a 0700 directory)") { text, context in
                Parse.path(baseDirectory: context.baseDirectory)(text)
            },
            .bool(\.shareViaStore, "share_via_store", "true: kept in revocations.store (Redis), one order for all replicas"),
            .optional(\.eabKeyID, "eab_kid", "External Account Binding, for CAs that require it (with eab_hmac_key)") {
                text, _ in Parse.nonEmpty(text)
            },
            .optional(\.eabHMACKey, "eab_hmac_key", "the CA's base64url MAC key", Self.parseEABKey),
            .optional(\.caFile, "ca_file", "trust anchors for the CA's own HTTPS (a private CA), beside the system's") {
                text, context in Parse.readableFile(baseDirectory: context.baseDirectory)(text)
            },
        ]

        private static func parseDirectory(_ text: String) -> Result<HTTPURL, ValueError> {
            switch text {
            case "letsencrypt": return .success(namedDirectory(letsEncrypt))
            case "letsencrypt-staging": return .success(namedDirectory(letsEncryptStaging))
            default:
                return HTTPURL.parse(text, allowPath: true, allowQuery: false).flatMap { url in
                    url.isHTTPS || url.isLoopback ? .success(url)
                        : .failure(ValueError("\(quoted(text)) must be https (an ACME directory is fetched over TLS)"))
                }
            }
        }

        private static func namedDirectory(_ text: String) -> HTTPURL {
            // Both constants parse; a failure here would be a typo in them, caught by the tests.
            (try? HTTPURL.parse(text, allowPath: true, allowQuery: false).get())!
        }

        private static func parseDomain(_ text: String) -> Result<String, ValueError> {
            let lower = text.lowercased()
            return HostName.isValidDNSName(lower) && !HostName.isIPLiteral(lower) && lower.contains(".") && !lower.hasPrefix("*")
                ? .success(lower)
                : .failure(ValueError("\(quoted(text)) is not a DNS name a CA issues for (no IP addresses, no wildcards)"))
        }

        private static func parseEABKey(_ text: String, _ context: ParseContext) -> Result<Secret, ValueError> {
            Secret.resolve(text, environment: context.environment, baseDirectory: context.baseDirectory).flatMap { secret in
                Base64URLText.decode(secret.string.trimmingCharacters(in: .whitespacesAndNewlines)).map {
                    .success(Secret(bytes: $0, source: secret.source))
                } ?? .failure(ValueError("the EAB HMAC key from \(secret.source) is not base64url"))
            }
        }
    }
}
