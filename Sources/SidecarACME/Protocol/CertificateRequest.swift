import COpenSSL
import Glibc
import SidecarCrypto

/// The key a certificate is issued for, and the CSR that asks for it (RFC 8555 §7.4: DER,
/// the domains as subjectAltName dNSNames, the first also as the common name).
public enum CertificateKeyType: String, Sendable, CaseIterable {
    case ecdsa = "ecdsa-p256"
    case rsa = "rsa-2048"

    /// A fresh key as PKCS#8 PEM (a new one for every certificate: a key never outlives the
    /// certificate it was issued for).
    public func generatePEM() throws(ACMEError) -> String {
        do {
            switch self {
            case .ecdsa: return try P256PrivateKey.generate().pkcs8PEM()
            case .rsa: return try RSAPrivateKey.generate(bits: 2048).pkcs8PEM()
            }
        } catch {
            throw ACMEError(.local, "acme: generating a \(rawValue) key failed: \(error)")
        }
    }

    /// A fresh account key.
    public func generateAccountKey() throws(ACMEError) -> JWSSigningKey {
        do {
            switch self {
            case .ecdsa: return .es256(try P256PrivateKey.generate())
            case .rsa: return .rs256(try RSAPrivateKey.generate(bits: 2048))
            }
        } catch {
            throw ACMEError(.local, "acme: generating the account key failed: \(error)")
        }
    }
}

enum CertificateRequest {
    /// The DER CSR for `domains`, signed by the private key in `keyPEM`.
    static func der(domains: [String], keyPEM: String) throws(ACMEError) -> [UInt8] {
        guard let first = domains.first,
              domains.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(Self.isHostByte) }) else {
            throw ACMEError(.local, "acme: cannot request a certificate for \(domains)")
        }
        guard let key = OpenSSLObjects.privateKey(pem: keyPEM) else { throw ACMEError(.local, "acme: unreadable certificate key") }
        defer { EVP_PKEY_free(key) }
        guard let request = X509_REQ_new() else { throw ACMEError(.local, "acme: X509_REQ_new failed") }
        defer { X509_REQ_free(request) }
        var ok = X509_REQ_set_version(request, 0) == 1
        if let name = X509_NAME_new() {
            defer { X509_NAME_free(name) }
            ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, first, -1, -1, 0) == 1
            ok = ok && X509_REQ_set_subject_name(request, name) == 1
        } else {
            ok = false
        }
        let names = domains.map { "DNS:" + $0 }.joined(separator: ",")
        if ok, let extension_ = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, names) {
            defer { X509_EXTENSION_free(extension_) }
            ok = sidecar_X509_REQ_add_extension(request, extension_) == 1
        } else {
            ok = false
        }
        ok = ok && X509_REQ_set_pubkey(request, key) == 1
        ok = ok && X509_REQ_sign(request, key, EVP_sha256()) > 0
        guard ok else {
            ERR_clear_error()
            throw ACMEError(.local, "acme: building the certificate request failed")
        }
        let length = i2d_X509_REQ(request, nil)
        guard length > 0 else { throw ACMEError(.local, "acme: encoding the certificate request failed") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509_REQ(request, &cursor)
        }
        guard written == length else { throw ACMEError(.local, "acme: encoding the certificate request failed") }
        return der
    }

    /// Letters, digits, `-` and `.`: what config lets through as a domain; a comma would
    /// otherwise split one subjectAltName entry in two.
    private static func isHostByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}

/// Small OpenSSL readers shared by the CSR and the certificate summary.
enum OpenSSLObjects {
    static func privateKey(pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            let key = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            if key == nil { ERR_clear_error() }
            return key
        }
    }

    /// The first certificate of a PEM chain.
    static func leaf(pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            let cert = PEM_read_bio_X509(bio, nil, nil, nil)
            if cert == nil { ERR_clear_error() }
            return cert
        }
    }

    static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
