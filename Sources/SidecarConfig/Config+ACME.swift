/// `tls.acme`: the listener's certificate obtained and renewed from an ACME CA (RFC 8555).
extension Config {
    public struct ACME: Sendable {
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
        public var directory: HTTPURL
        /// DNS names the certificate covers; the first names the stored files.
        public var domains: [String]
        public var challenge = Challenge.tlsALPN01
        /// The plain listener answering HTTP-01 (and redirecting the rest to public_url).
        public var httpListen: ListenAddress
        public var keyType = KeyType.ecdsaP256
        /// Account key, certificates and keys (mode 0600 in a 0700 directory).
        public var storage: String
        /// Keep them in `revocations.store` (Redis) instead, shared by every replica.
        public var shareViaStore = false
        /// External Account Binding, for CAs that need it.
        public var eabKeyID: String?
        public var eabHMACKey: Secret?
        /// Trust anchors for the CA's own HTTPS (a private CA), besides the system's.
        public var caFile: String?
    }
}
