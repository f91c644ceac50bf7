import COpenSSL
import Glibc

/// Why a certificate and key cannot be served. Names the files, never key material.
public struct TLSSetupError: Error, CustomStringConvertible {
    public let description: String
}

/// The public listener's TLS configuration (`tls.cert_file`, `tls.key_file`): TLS 1.2 and
/// 1.3 only, Mozilla's "intermediate" cipher suites, ALPN `h2` (with `http2`) then `http/1.1`, session resumption
/// (tickets and the server-side cache), a PEM certificate chain and an ECDSA or RSA key.
///
/// Immutable once made and shared by every worker (OpenSSL allows `SSL_new` on one `SSL_CTX`
/// from several threads). A reload makes a new one: new connections use it, connections
/// already open keep the context their `SSL` holds a reference to.
public final class TLSServerContext: @unchecked Sendable {
    let ctx: OpaquePointer
    public let certFile: String
    public let keyFile: String
    /// The leaf certificate's subject and validity, for logs and `sidecar check`.
    public let summary: String

    /// Mozilla intermediate (v5.7) for TLS 1.2; TLS 1.3 keeps OpenSSL's default suites, which
    /// are exactly Mozilla's (AES-128/256-GCM, ChaCha20-Poly1305).
    static let tls12Ciphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
        "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384", "DHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// Reads and checks the pair: the chain parses, the key parses (an encrypted key is
    /// refused, never prompted for), the key belongs to the certificate, and the certificate
    /// is valid now.
    public init(certFile: String, keyFile: String, http2: Bool = false, now: time_t = time(nil)) throws(TLSSetupError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSSetupError(description: "tls: SSL_CTX_new failed") }
        self.ctx = ctx
        self.certFile = certFile
        self.keyFile = keyFile
        var ok = sidecar_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1
        ok = ok && SSL_CTX_set_cipher_list(ctx, Self.tls12Ciphers) == 1
        ok = ok && sidecar_SSL_CTX_set1_groups_list(ctx, "X25519:P-256:P-384") == 1
        guard ok else {
            SSL_CTX_free(ctx)
            throw TLSSetupError(description: "tls: \(Self.lastError("cannot configure protocols and ciphers"))")
        }
        _ = sidecar_SSL_CTX_set_dh_auto(ctx, 1)
        _ = SSL_CTX_set_options(ctx, sidecar_SSL_OP_server())
        _ = sidecar_SSL_CTX_set_mode(ctx, sidecar_SSL_MODE_server())
        // Read whole socket buffers at once: one read(2) per readiness, as for plain HTTP.
        sidecar_SSL_CTX_set_read_ahead(ctx, 1)
        if http2 { sidecar_SSL_CTX_select_h2(ctx) } else { sidecar_SSL_CTX_select_http11(ctx) }
        TLSALPNChallenges.install(on: ctx)
        sidecar_SSL_CTX_decline_passwords(ctx)
        let sessionContext: [UInt8] = Array("sidecar".utf8)
        _ = SSL_CTX_set_session_id_context(ctx, sessionContext, UInt32(sessionContext.count))

        do {
            try Self.load(ctx, certFile: certFile, keyFile: keyFile)
            summary = try Self.checkValidity(ctx, certFile: certFile, now: now)
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
    }

    deinit { SSL_CTX_free(ctx) }

    private static func load(_ ctx: OpaquePointer, certFile: String, keyFile: String) throws(TLSSetupError) {
        guard SSL_CTX_use_certificate_chain_file(ctx, certFile) == 1 else {
            throw TLSSetupError(description: "tls.cert_file: \(lastError("\(certFile) is not a PEM certificate chain"))")
        }
        let mismatch = "tls.key_file: \(keyFile) does not belong to the certificate in \(certFile)"
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
            let reason = lastError("not a PEM private key")
            // OpenSSL compares the key with the certificate already here.
            if reason.contains("key values mismatch") { throw TLSSetupError(description: mismatch) }
            throw TLSSetupError(description: "tls.key_file: \(keyFile) "
                + (isEncryptedPEM(keyFile) ? "is password-protected; the sidecar needs it unencrypted" : "cannot be used: \(reason)"))
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            throw TLSSetupError(description: mismatch)
        }
    }

    /// PKCS#8 (`ENCRYPTED PRIVATE KEY`) or traditional (`Proc-Type: 4,ENCRYPTED`) encryption:
    /// OpenSSL only says "PEM lib" for those, which would not point at the fix.
    private static func isEncryptedPEM(_ path: String) -> Bool {
        guard let file = fopen(path, "rb") else { return false }
        defer { fclose(file) }
        var head = [UInt8](repeating: 0, count: 4096)
        let count = fread(&head, 1, head.count, file)
        let text = String(decoding: head[..<count], as: UTF8.self)
        return text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED")
    }

    /// A certificate outside its validity period is refused: clients would refuse it anyway,
    /// and an operator learns it from `check` instead of from users.
    private static func checkValidity(_ ctx: OpaquePointer, certFile: String, now: time_t) throws(TLSSetupError) -> String {
        guard let cert = SSL_CTX_get0_certificate(ctx) else {
            throw TLSSetupError(description: "tls.cert_file: \(certFile) holds no certificate")
        }
        var at = now
        let notBefore = X509_get0_notBefore(cert), notAfter = X509_get0_notAfter(cert)
        let until = timeText(notAfter)
        if X509_cmp_time(notAfter, &at) < 0 {
            throw TLSSetupError(description: "tls.cert_file: \(certFile) expired on \(until)")
        }
        if X509_cmp_time(notBefore, &at) > 0 {
            throw TLSSetupError(description: "tls.cert_file: \(certFile) is not valid before \(timeText(notBefore))")
        }
        return "\(subject(cert)), valid until \(until)"
    }

    /// Whether the leaf certificate names `host` (a DNS name, wildcard rules as browsers
    /// apply them, or an IP address literal).
    public func names(host: String) -> Bool {
        guard let cert = SSL_CTX_get0_certificate(ctx) else { return false }
        var bare = host
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        if bare.contains(":") || bare.allSatisfy({ $0.isNumber || $0 == "." }) {
            return X509_check_ip_asc(cert, bare, 0) == 1
        }
        return X509_check_host(cert, bare, bare.utf8.count, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil) == 1
    }

    private static func subject(_ cert: OpaquePointer) -> String {
        guard let name = X509_get_subject_name(cert), let text = X509_NAME_oneline(name, nil, 0) else { return "?" }
        defer { sidecar_OPENSSL_free(text) }
        return String(cString: text)
    }

    private static func timeText(_ time: UnsafePointer<ASN1_TIME>?) -> String {
        guard let time, let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        _ = ASN1_TIME_print(bio, time)
        return bioText(bio)
    }

    private static func bioText(_ bio: OpaquePointer) -> String {
        var data: UnsafeMutablePointer<CChar>?
        let length = sidecar_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    /// OpenSSL's reason for the last failure (e.g. "ee key too small"), queue cleared.
    static func lastError(_ fallback: String) -> String {
        let code = ERR_peek_last_error()
        defer { ERR_clear_error() }
        guard code != 0, let reason = ERR_reason_error_string(code) else { return fallback }
        return "\(fallback) (\(String(cString: reason)))"
    }

    /// A server-side `SSL` for one accepted connection (its stream attaches the socket).
    func makeSSL() -> OpaquePointer? {
        guard let ssl = SSL_new(ctx) else { return nil }
        SSL_set_accept_state(ssl)
        return ssl
    }
}
