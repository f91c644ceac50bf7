import COpenSSL

/// The verifying TLS client configuration shared by one client's connections: TLS 1.2+,
/// peer verification against the system store plus an optional extra CA file. Used by the
/// Apple client and the Redis store (`rediss://`), so both verify alike; upstreams add a
/// client certificate, their own trust and session resumption (`init(upstream:)`).
public final class TLSClientContext: @unchecked Sendable {
    public enum SetupError: Error, Equatable, Sendable {
        case tlsContextCreation
        case caFileUnreadable(String)
    }

    /// What a proxied upstream's connections use.
    public struct UpstreamOptions: Sendable, Equatable {
        /// Trust only these CAs; nil: the system's trust store.
        public var caFile: String?
        public var clientCertificate: String?
        public var clientKey: String?
        /// false: no verification at all (the operator's choice, warned about at every start).
        public var verify = true

        public init(caFile: String? = nil, clientCertificate: String? = nil, clientKey: String? = nil, verify: Bool = true) {
            self.caFile = caFile
            self.clientCertificate = clientCertificate
            self.clientKey = clientKey
            self.verify = verify
        }
    }

    /// Immutable after init; OpenSSL's SSL_CTX is safe to share for SSL_new across threads.
    public let ctx: OpaquePointer
    private var verifies = true

    public init(caFile: String?) throws(SetupError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .tlsContextCreation }
        self.ctx = ctx
        try Self.configure(ctx)
        _ = SSL_CTX_set_default_verify_paths(ctx)
        ERR_clear_error()
        if let caFile { try Self.trust(ctx, caFile) }
    }

    /// An upstream's: the CA file replaces the system store (a private CA's name must not be
    /// vouched for by any public one too), an optional client certificate, and sessions kept
    /// for resumption by the caller (`TLSSessionSlot`), so a new connection skips the full
    /// handshake.
    public init(upstream options: UpstreamOptions) throws(TLSSetupError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSSetupError(description: "cannot create a TLS context") }
        self.ctx = ctx
        do {
            try Self.configure(ctx)
            if let caFile = options.caFile { try Self.trust(ctx, caFile) }
        } catch {
            throw TLSSetupError(description: error == .tlsContextCreation ? "cannot create a TLS context"
                : "cannot read CA file \(options.caFile ?? "") (PEM certificates expected)")
        }
        if options.caFile == nil {
            _ = SSL_CTX_set_default_verify_paths(ctx)
            ERR_clear_error()
        }
        if !options.verify {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
            verifies = false
        }
        if let certificate = options.clientCertificate, let key = options.clientKey {
            try Self.identify(ctx, certificate: certificate, key: key)
        }
        sidecar_SSL_CTX_set_read_ahead(ctx, 1)
        TLSSessionSlot.install(on: ctx)
    }

    deinit { SSL_CTX_free(ctx) }

    private static func configure(_ ctx: OpaquePointer) throws(SetupError) {
        guard sidecar_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
            throw .tlsContextCreation
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // Framing (Content-Length / chunked) detects truncation; a peer that closes without
        // close_notify after a complete response is not an error.
        _ = SSL_CTX_set_options(ctx, sidecar_SSL_OP_IGNORE_UNEXPECTED_EOF())
    }

    private static func trust(_ ctx: OpaquePointer, _ caFile: String) throws(SetupError) {
        guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
            ERR_clear_error()
            throw .caFileUnreadable(caFile)
        }
    }

    private static func identify(_ ctx: OpaquePointer, certificate: String, key: String) throws(TLSSetupError) {
        sidecar_SSL_CTX_decline_passwords(ctx)
        defer { ERR_clear_error() }
        guard SSL_CTX_use_certificate_chain_file(ctx, certificate) == 1 else {
            throw TLSSetupError(description: "cannot read client certificate \(certificate) (a PEM certificate chain expected)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 else {
            throw TLSSetupError(description: "cannot read client key \(key) (an unencrypted PEM private key expected)")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSSetupError(description: "client key \(key) does not belong to client certificate \(certificate)")
        }
    }

    /// A new SSL for one connection to `host`: SNI (names only) and host or IP verification.
    public func makeSSL(host: String, isIPLiteral: Bool) -> OpaquePointer? {
        guard let ssl = SSL_new(ctx) else { return nil }
        var ok = true
        if isIPLiteral {
            if verifies { ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 }
        } else {
            X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            ok = sidecar_SSL_set_tlsext_host_name(ssl, host) == 1 && (!verifies || SSL_set1_host(ssl, host) == 1)
        }
        guard ok else {
            SSL_free(ssl)
            return nil
        }
        return ssl
    }
}
