import COpenSSL
import Glibc

/// A self-signed certificate for one domain: the placeholder the TLS listener shows until the
/// first certificate is issued (no browser trusts it, `/readyz` says 503 meanwhile), and the
/// TLS-ALPN-01 answer (RFC 8737 §3), which carries the critical `acmeIdentifier` extension.
enum SelfSignedCertificate {
    /// id-pe-acmeIdentifier (RFC 8737 §6.1).
    static let acmeIdentifierOID = "1.3.6.1.5.5.7.1.31"

    /// The certificate as PEM, signed by `keyPEM`'s key, valid from an hour ago for `days`.
    /// `acmeIdentifier`: the SHA-256 of the key authorization, for a TLS-ALPN-01 answer.
    static func pem(domain: String, keyPEM: String, days: Int, acmeIdentifier: [UInt8]? = nil) throws(ACMEError) -> String {
        guard let key = OpenSSLObjects.privateKey(pem: keyPEM) else { throw ACMEError(.local, "acme: unreadable key") }
        defer { EVP_PKEY_free(key) }
        guard let cert = X509_new() else { throw ACMEError(.local, "acme: X509_new failed") }
        defer { X509_free(cert) }
        var serial = [UInt8](repeating: 0, count: 16)
        _ = RAND_bytes(&serial, 16)
        serial[0] &= 0x7F
        var ok = X509_set_version(cert, 2) == 1
        if let number = BN_bin2bn(serial, 16, nil) {
            ok = ok && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert)) != nil
            BN_free(number)
        }
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert), days * 86_400) != nil
        if let name = X509_get_subject_name(cert) {
            ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, domain, -1, -1, 0) == 1
            ok = ok && X509_set_issuer_name(cert, name) == 1
        }
        ok = ok && X509_set_pubkey(cert, key) == 1
        if ok, let san = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, "DNS:" + domain) {
            ok = X509_add_ext(cert, san, -1) == 1
            X509_EXTENSION_free(san)
        } else {
            ok = false
        }
        if ok, let digest = acmeIdentifier {
            ok = addACMEIdentifier(cert, digest)
        }
        ok = ok && X509_sign(cert, key, EVP_sha256()) > 0
        guard ok, let bio = BIO_new(BIO_s_mem()) else {
            ERR_clear_error()
            throw ACMEError(.local, "acme: building a self-signed certificate for \(domain) failed")
        }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, cert) == 1 else { throw ACMEError(.local, "acme: encoding a certificate failed") }
        var data: UnsafeMutablePointer<CChar>?
        let length = sidecar_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw ACMEError(.local, "acme: encoding a certificate failed") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// The extension's value is the DER OCTET STRING of the digest (RFC 8737 §3), itself
    /// wrapped in the extension's OCTET STRING; critical.
    private static func addACMEIdentifier(_ cert: OpaquePointer, _ digest: [UInt8]) -> Bool {
        guard digest.count == 32, let object = OBJ_txt2obj(acmeIdentifierOID, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { return false }
        defer { ASN1_OCTET_STRING_free(value) }
        let inner: [UInt8] = [0x04, 0x20] + digest
        guard ASN1_OCTET_STRING_set(value, inner, Int32(inner.count)) == 1,
              let extension_ = X509_EXTENSION_create_by_OBJ(nil, object, 1, value) else { return false }
        defer { X509_EXTENSION_free(extension_) }
        return X509_add_ext(cert, extension_, -1) == 1
    }
}
