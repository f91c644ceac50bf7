/// Where the account key and the certificate with its key are kept: a directory on one
/// machine, or the shared Redis store so that replicas share one account and one certificate.
public protocol CertificateStorage: AnyObject {
    /// A readable name for logs (`/var/lib/sidecar/acme`, `redis://…`).
    var location: String { get }
    func accountKey() throws(ACMEError) -> String?
    func saveAccountKey(_ pem: String) throws(ACMEError)
    func certificate() throws(ACMEError) -> StoredCertificate?
    func saveCertificate(_ certificate: StoredCertificate) throws(ACMEError)
    /// Takes the ordering lock for `seconds` (true) unless another holder has it (false):
    /// with several replicas only one orders at a time. A directory has a single writer.
    func acquireOrderLock(seconds: Int) throws(ACMEError) -> Bool
    func releaseOrderLock()
}

/// A certificate chain (leaf first) and its private key, both PEM.
public struct StoredCertificate: Sendable, Equatable {
    public let chainPEM: String
    public let keyPEM: String

    public init(chainPEM: String, keyPEM: String) {
        self.chainPEM = chainPEM
        self.keyPEM = keyPEM
    }
}
