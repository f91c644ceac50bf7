import COpenSSL
import SidecarCrypto

/// What the lifecycle needs to know of a stored certificate: its validity, whether it names
/// every configured domain, and its ARI identifier (RFC 9773 §4.1).
public struct CertificateSummary: Sendable, Equatable {
    public let notBefore: Int64
    public let notAfter: Int64
    /// base64url(authorityKeyIdentifier) "." base64url(serial): nil without an AKI.
    public let renewalID: String?
    private let namesAll: Bool

    /// nil when `pem` holds no readable certificate.
    public init?(pem: String, domains: [String]) {
        guard let cert = OpenSSLObjects.leaf(pem: pem) else { return nil }
        defer { X509_free(cert) }
        guard let notBefore = OpenSSLObjects.epochSeconds(X509_get0_notBefore(cert)),
              let notAfter = OpenSSLObjects.epochSeconds(X509_get0_notAfter(cert)) else { return nil }
        self.notBefore = notBefore
        self.notAfter = notAfter
        namesAll = domains.allSatisfy { domain in
            X509_check_host(cert, domain, domain.utf8.count, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil) == 1
        }
        renewalID = Self.renewalID(cert)
    }

    /// Valid now, not about to expire within `margin` seconds, and naming every domain.
    public func isUsable(now: Int64, margin: Int64 = 0) -> Bool {
        namesAll && notBefore <= now + 300 && notAfter > now + margin
    }

    public var namesEveryDomain: Bool { namesAll }

    /// Two-thirds into the lifetime: the default renewal time (Let's Encrypt's advice for
    /// 90-day certificates: renew at 60 days), used where the CA offers no ARI.
    public var twoThirdsPoint: Int64 { notBefore + (notAfter - notBefore) * 2 / 3 }

    private static func renewalID(_ cert: OpaquePointer) -> String? {
        guard let keyID = X509_get0_authority_key_id(cert), let serial = X509_get0_serialNumber(cert) else { return nil }
        let keyBytes = bytes(of: keyID)
        var serialBytes = bytes(of: serial)
        // The DER INTEGER's content octets: a leading zero where the high bit is set.
        if let first = serialBytes.first, first & 0x80 != 0 { serialBytes.insert(0, at: 0) }
        guard !keyBytes.isEmpty, !serialBytes.isEmpty else { return nil }
        return Base64URL.encode(keyBytes) + "." + Base64URL.encode(serialBytes)
    }

    private static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(string))
        guard length > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }
}
