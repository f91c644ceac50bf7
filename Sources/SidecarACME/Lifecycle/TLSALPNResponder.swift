import SidecarCrypto
import SidecarEvent

/// TLS-ALPN-01 (RFC 8737) on the public TLS listener: a self-signed certificate for the domain
/// with the critical acmeIdentifier extension (SHA-256 of the key authorization), served only to
/// a handshake that offers `acme-tls/1` alone (`TLSALPNChallenges`) while the challenge lasts.
/// Works where port 80 belongs to something else (a redirect) or is closed.
public final class TLSALPNResponder: ChallengeSolver {
    public let challengeType = "tls-alpn-01"

    public init() {}

    public func present(domain: String, token: String, keyAuthorization: String) throws(ACMEError) {
        let keyPEM = try CertificateKeyType.ecdsa.generatePEM()
        let certificate = try SelfSignedCertificate.pem(
            domain: domain, keyPEM: keyPEM, days: 7, acmeIdentifier: SHA256.hash(Array(keyAuthorization.utf8)))
        do { try TLSALPNChallenges.answer(domain: domain, certificatePEM: certificate, keyPEM: keyPEM) } catch {
            throw ACMEError(.local, error.description)
        }
    }

    public func withdraw(domain: String, token: String) { TLSALPNChallenges.withdraw(domain: domain) }
}
