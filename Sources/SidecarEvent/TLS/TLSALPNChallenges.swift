import COpenSSL
import Synchronization

/// TLS-ALPN-01 answers (RFC 8737) on the public TLS listener: while a challenge for a domain
/// is in progress, a handshake that offers only `acme-tls/1` with that SNI name gets the
/// challenge's self-signed certificate and that protocol, and nothing else; every other
/// handshake is untouched. Set by the ACME thread, read by the workers' handshakes.
public enum TLSALPNChallenges {
    /// Set once at start, before any `TLSServerContext` is made: contexts made while it is on
    /// look at each ClientHello's ALPN list (a few byte compares), others do not.
    public static let enabled = Atomic<Bool>(false)

    private final class Context: @unchecked Sendable {
        let ctx: OpaquePointer
        init(_ ctx: OpaquePointer) { self.ctx = ctx }
        deinit { SSL_CTX_free(ctx) }
    }

    private static let table = Mutex<[String: Context]>([:])

    /// Answers `domain`'s challenge with `certificatePEM` (carrying the acmeIdentifier) and its key.
    public static func answer(domain: String, certificatePEM: String, keyPEM: String) throws(TLSSetupError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSSetupError(description: "acme: SSL_CTX_new failed") }
        let context = Context(ctx)
        guard sidecar_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1,
              let cert = read(certificatePEM, { PEM_read_bio_X509($0, nil, nil, nil) }), let key = read(keyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) })
        else {
            ERR_clear_error()
            throw TLSSetupError(description: "acme: unreadable tls-alpn-01 certificate")
        }
        defer {
            X509_free(cert)
            EVP_PKEY_free(key)
        }
        guard SSL_CTX_use_certificate(ctx, cert) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1 else {
            ERR_clear_error()
            throw TLSSetupError(description: "acme: the tls-alpn-01 certificate and key do not match")
        }
        sidecar_SSL_CTX_select_acme(ctx)
        table.withLock { $0[domain.lowercased()] = context }
    }

    public static func withdraw(domain: String) { _ = table.withLock { $0.removeValue(forKey: domain.lowercased()) } }

    private static func read(_ pem: String, _ reader: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return reader(bio)
        }
    }

    /// Called from the ClientHello callback: the context for `name`, with a reference for the caller.
    static let lookup: sidecar_acme_lookup_fn = { name, length in
        guard let name, length <= 253 else { return nil }
        let host = String(decoding: UnsafeBufferPointer(start: name, count: length), as: UTF8.self).lowercased()
        return table.withLock { table -> OpaquePointer? in
            guard let context = table[host], SSL_CTX_up_ref(context.ctx) == 1 else { return nil }
            return context.ctx
        }
    }

    static func install(on ctx: OpaquePointer) {
        if enabled.load(ordering: .acquiring) { sidecar_SSL_CTX_answer_acme_tls(ctx, lookup, 0) }
    }

    /// Makes `context` complete challenge handshakes only: what the listener serves before
    /// the first certificate is issued, so that no client is shown a certificate it cannot
    /// trust and nothing (the sign-in flow least of all) is served without a real one.
    public static func refuseOtherHandshakes(on context: TLSServerContext) {
        sidecar_SSL_CTX_answer_acme_tls(context.ctx, lookup, 1)
    }
}
