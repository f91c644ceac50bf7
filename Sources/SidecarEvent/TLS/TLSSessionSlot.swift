import COpenSSL

/// The latest resumable TLS session of the connections to one server, offered by the next
/// connection so that it resumes (a ticket) instead of paying a full handshake. One per server
/// and loop: each connection's `SSL` points at its slot (app data), which is how the context's
/// new-session callback files a session where it belongs. Loop thread only.
public final class TLSSessionSlot {
    private var session: OpaquePointer?

    public init() {}

    deinit { if let session { SSL_SESSION_free(session) } }

    /// Before the handshake: offers the kept session and keeps those this connection receives.
    /// The slot must outlive `ssl` (its connection holds what holds the slot).
    public func attach(to ssl: OpaquePointer) {
        if let session { _ = SSL_set_session(ssl, session) }
        _ = sidecar_SSL_set_app_data(ssl, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A session is kept from now on (TLS 1.3 sends tickets after the handshake).
    public var holdsSession: Bool { session != nil }

    static func install(on ctx: OpaquePointer) {
        _ = sidecar_SSL_CTX_cache_client_sessions_outside(ctx)
        SSL_CTX_sess_set_new_cb(ctx) { ssl, session in
            guard let ssl, let session, let data = sidecar_SSL_get_app_data(ssl) else { return 0 }
            let slot = Unmanaged<TLSSessionSlot>.fromOpaque(data).takeUnretainedValue()
            if let old = slot.session { SSL_SESSION_free(old) }
            slot.session = session
            return 1  // the reference is the slot's now
        }
    }
}
