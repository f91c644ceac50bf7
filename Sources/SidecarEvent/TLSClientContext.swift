import COpenSSL

/// The verifying TLS client configuration shared by one client's connections: TLS 1.2+,
/// peer verification against the system store plus an optional extra CA file. Used by the
/// Apple client and the Redis store (`rediss://`), so both verify alike.
public final class TLSClientContext: @unchecked Sendable {
    public enum SetupError: Error, Equatable, Sendable {
        case tlsContextCreation
        case caFileUnreadable(String)
    }

    /// Immutable after init; OpenSSL's SSL_CTX is safe to share for SSL_new across threads.
    public let ctx: OpaquePointer

    public init(caFile: String?) throws(SetupError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .tlsContextCreation }
        self.ctx = ctx
        guard sidecar_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
            throw .tlsContextCreation
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // Framing (Content-Length / chunked) detects truncation; a peer that closes without
        // close_notify after a complete response is not an error.
        _ = SSL_CTX_set_options(ctx, sidecar_SSL_OP_IGNORE_UNEXPECTED_EOF())
        _ = SSL_CTX_set_default_verify_paths(ctx)
        ERR_clear_error()
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                ERR_clear_error()
                throw .caFileUnreadable(caFile)
            }
        }
    }

    deinit { SSL_CTX_free(ctx) }

    /// A new SSL for one connection to `host`: SNI (names only) and host or IP verification.
    public func makeSSL(host: String, isIPLiteral: Bool) -> OpaquePointer? {
        guard let ssl = SSL_new(ctx) else { return nil }
        let ok: Bool
        if isIPLiteral {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
        } else {
            X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            ok = sidecar_SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1
        }
        guard ok else {
            SSL_free(ssl)
            return nil
        }
        return ssl
    }
}
