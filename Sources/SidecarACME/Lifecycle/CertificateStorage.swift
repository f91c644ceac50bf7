import COpenSSL

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

extension StoredCertificate {
    /// The key belongs to the leaf: a pair that does not (a CA's mistake, a store written by
    /// hand) is never saved or served, since the listener could not load it.
    public var keyMatches: Bool {
        guard let leaf = OpenSSLObjects.leaf(pem: chainPEM) else { return false }
        defer { X509_free(leaf) }
        guard let key = OpenSSLObjects.privateKey(pem: keyPEM) else { return false }
        defer { EVP_PKEY_free(key) }
        let matches = X509_check_private_key(leaf, key) == 1
        ERR_clear_error()
        return matches
    }
}
