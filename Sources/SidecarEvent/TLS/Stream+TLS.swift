import CEvent
import COpenSSL
import Glibc

/// One connection's OpenSSL state. Owned by its `Stream` (loop thread only).
struct TLSState {
    /// nil when `SSL_new` failed: the stream then fails its first read.
    var ssl: OpaquePointer?
    var handshaking = true
    /// The last `SSL_write` needed to read first: encrypt again after the next read.
    var writeWantsRead = false
    /// OpenSSL's error that ended the connection (0: none), for the owner to say why.
    var failure: UInt = 0

    init(ssl: OpaquePointer?) { self.ssl = ssl }

    func free() {
        guard let ssl else { return }
        // A client's session stays resumable however the connection ended (as nginx does for
        // its upstreams): OpenSSL would otherwise mark it spent for want of a close_notify.
        if SSL_is_server(ssl) == 0 { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN) }
        SSL_free(ssl)
    }
}

/// The TLS side of `Stream`: the handshake, then `SSL_read` into the loop's scratch buffer
/// and `SSL_write` from `output` into `wire` (`TLSWireBIO`), with the same delegate calls and
/// the same flow control as plain streams. Syscalls: read-ahead lets one `recv` take what
/// the socket holds, and `wire` leaves like a plain stream's output (one `send`, or the
/// iteration's io_uring batch); `output` is encrypted in records of up to 16 KiB, so a small
/// response head and body make one record.
extension Stream {
    /// A plain-HTTP request on this port is answered with this (in the clear) and closed.
    private static let plainHTTPAnswer = Array((
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 43\r\n"
            + "Connection: close\r\n\r\nThis port speaks HTTPS; use an https:// URL\n").utf8)

    /// Gives the `SSL` its BIO; without one the stream fails its first read.
    func attachTLS() {
        guard let ssl = tls?.ssl, !TLSWireBIO.attach(ssl, to: self) else { return }
        SSL_free(ssl)
        tls?.ssl = nil
    }

    /// The client chose `h2` by ALPN during the handshake.
    public var negotiatedHTTP2: Bool {
        guard let ssl = tls?.ssl else { return false }
        var selected: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &selected, &length)
        guard length == 2, let selected else { return false }
        return selected[0] == UInt8(ascii: "h") && selected[1] == UInt8(ascii: "2")
    }

    /// Ends the sending direction after everything queued was written: a TLS `close_notify`
    /// first (so the client can tell a complete response from a truncated one), then
    /// `shutdown(SHUT_WR)`.
    public func shutdownWrite() {
        guard !isClosed else { return }
        if fd < 0 { return close() }
        if let ssl = tls?.ssl, tls?.handshaking == false {
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
            _ = sendWire()  // the close_notify, if the socket takes it now
        }
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    func readTLS() {
        guard let ssl = tls?.ssl else { return fail(ENOMEM) }
        if tls!.handshaking {
            guard continueHandshake(ssl) else { return }
        }
        var total = 0
        var ended: Int32? = nil
        while true {
            let count = SSL_read(ssl, scratch, Int32(EventLoop.readScratchSize))
            if count > 0 {
                guard input.append(scratch, count: Int(count)) else { return fail(ENOMEM) }
                total += Int(count)
                // What read-ahead took from the socket may hold more records: take them
                // now, or no readiness would report them. Then stop without another recv.
                if SSL_has_pending(ssl) == 1 { continue }
                break
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                break  // (`wire` takes every write: only reads can block)
            case SSL_ERROR_ZERO_RETURN:
                ended = 0  // close_notify: the client finished sending
            case SSL_ERROR_SYSCALL:
                ended = count == 0 ? 0 : (errno == 0 ? ECONNRESET : errno)
                if ended == EAGAIN || ended == EINTR { ended = nil }
            default:
                ended = EPROTO
                tls!.failure = ERR_peek_error()
            }
            ERR_clear_error()
            break
        }
        // Records OpenSSL wrote while reading (alerts, a key update's answer).
        if wire.count > 0, sendWire() != 0 { return fail(EPIPE) }
        if total > 0 {
            delegate?.stream(self, didRead: total, error: 0)
            if isClosed { return }
        }
        if tls!.writeWantsRead, output.count > 0 {
            tls!.writeWantsRead = false
            if flush() != 0 { return fail(EPIPE) }
        }
        if let ended { delegate?.stream(self, didRead: 0, error: ended) }
    }

    func writeReadyTLS() {
        guard let ssl = tls?.ssl else { return fail(ENOMEM) }
        if tls!.handshaking {
            guard continueHandshake(ssl) else { return }
            // The client's request may have arrived with its last handshake flight.
            readTLS()
            if isClosed { return }
        }
        let error = flush()
        if error != 0 {
            delegate?.stream(self, didRead: 0, error: error)
        } else if pendingOutput == 0 {
            delegate?.streamDidDrain(self)
        }
    }

    /// A client stream (`clientTLS`) whose socket is connected sends its hello; the delegate
    /// hears `streamDidHandshake` once the server is verified, or a failed read.
    public func startTLSHandshake() {
        guard let ssl = tls?.ssl else { return fail(ENOMEM) }
        guard tls!.handshaking else { return }
        _ = continueHandshake(ssl)
    }

    /// Why the TLS connection failed, nil when it did not: the certificate check's verdict
    /// (`certificate has expired`, OpenSSL's `X509_V_ERR_*` code and words) when the handshake
    /// failed on it, else OpenSSL's error (`tlsv13 alert certificate required`, code 0).
    public var tlsFailure: (verifyCode: Int, reason: String)? {
        guard let state = tls, let ssl = state.ssl, state.failure != 0 else { return nil }
        let verdict = SSL_get_verify_result(ssl)
        if state.handshaking, verdict != X509_V_OK, SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER != 0,
           let text = X509_verify_cert_error_string(verdict) {
            return (Int(verdict), String(cString: text))
        }
        return (0, ERR_reason_error_string(state.failure).map { String(cString: $0) } ?? "TLS error \(state.failure)")
    }

    /// The handshake resumed an earlier session (no certificate exchange).
    public var tlsSessionReused: Bool {
        guard let ssl = tls?.ssl, tls?.handshaking == false else { return false }
        return SSL_session_reused(ssl) == 1
    }

    /// Turns `output` into TLS records in `wire` (nothing while handshaking: it waits).
    /// 0, or an errno-like code for a failed connection.
    func encryptOutput() -> Int32 {
        guard let ssl = tls?.ssl else { return EPIPE }
        guard !tls!.handshaking, !tls!.writeWantsRead else { return 0 }
        while true {
            let length = output.count
            if length == 0 { return 0 }
            let chunk = min(length, 16 * 1024)
            guard let bytes = evbuffer_pullup(output.buffer, chunk) else { return ENOMEM }
            let written = SSL_write(ssl, bytes, Int32(chunk))
            if written > 0 {
                output.drain(Int(written))
                continue
            }
            let code = SSL_get_error(ssl, written)
            ERR_clear_error()
            switch code {
            case SSL_ERROR_WANT_READ:
                tls!.writeWantsRead = true
                return 0
            case SSL_ERROR_WANT_WRITE:
                return 0  // not with `TLSWireBIO`; the next flush tries again
            case SSL_ERROR_SYSCALL:
                return errno == 0 ? EPIPE : errno
            default:
                return EPROTO
            }
        }
    }

    /// Advances the handshake and sends what it wrote; true once it is complete (then the
    /// delegate was told).
    private func continueHandshake(_ ssl: OpaquePointer) -> Bool {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            tls!.handshaking = false
            if sendWire() != 0 {
                fail(EPIPE)
                return false
            }
            delegate?.streamDidHandshake(self)
            return !isClosed
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            if sendWire() != 0 { fail(EPIPE) }
        case SSL_ERROR_SYSCALL where result < 0 && (errno == EAGAIN || errno == EINTR):
            if sendWire() != 0 { fail(EPIPE) }
        default:
            tls!.failure = ERR_peek_error()
            if SSL_is_server(ssl) == 1, sidecar_is_http_request_error(ERR_peek_error()) == 1 {
                // Plain HTTP sent to the TLS port: say so in words the client can read.
                wire.drain(wire.count)
                _ = Self.plainHTTPAnswer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            } else {
                _ = sendWire()  // the alert, if the socket takes it now
            }
            ERR_clear_error()
            fail(EPROTO)
        }
        return false
    }

    private func fail(_ code: Int32) {
        delegate?.stream(self, didRead: 0, error: code)
    }
}
