import CEvent
import COpenSSL

/// A TLS server configuration (TLS 1.2+) from a PEM certificate chain and a PEM private key.
/// Immutable once made; OpenSSL allows one `SSL_CTX` to serve connections on several threads.
public final class ServiceTLSContext: @unchecked Sendable {
    let ctx: OpaquePointer

    public init(certificateFile: String, keyFile: String) throws(ServiceError) {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw .tls("SSL_CTX_new failed") }
        self.ctx = ctx
        guard sidecar_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
            throw .tls("cannot require TLS 1.2")
        }
        guard SSL_CTX_use_certificate_chain_file(ctx, certificateFile) == 1 else {
            ERR_clear_error()
            throw .tls("cannot read certificate chain \(certificateFile)")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) == 1 else {
            ERR_clear_error()
            throw .tls("cannot read private key \(keyFile)")
        }
        guard SSL_CTX_check_private_key(ctx) == 1 else {
            ERR_clear_error()
            throw .tls("private key \(keyFile) does not match the certificate")
        }
    }

    deinit { SSL_CTX_free(ctx) }

    func makeSSL() -> OpaquePointer? { SSL_new(ctx) }
}

public enum ServiceError: Error, CustomStringConvertible, Equatable {
    case tls(String)
    case listen(EventError)

    public var description: String {
        switch self {
        case .tls(let what): return "TLS: \(what)"
        case .listen(let error): return error.description
        }
    }
}
