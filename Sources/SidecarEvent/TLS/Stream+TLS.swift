import CEvent
import COpenSSL
import Glibc

/// One connection's OpenSSL state. Owned by its `Stream` (loop thread only).
struct TLSState {
    /// nil when `SSL_new` failed: the stream then fails its first read.
    let ssl: OpaquePointer?
    var handshaking = true
    /// The last `SSL_read` needed the socket writable (TLS 1.3 key update, alerts): retry
    /// the read when it is.
    var readWantsWrite = false
    /// The last `SSL_write` needed to read first: flush again after the next read.
    var writeWantsRead = false

    init(ssl: OpaquePointer?) { self.ssl = ssl }

    func free() { if let ssl { SSL_free(ssl) } }
}

/// The TLS side of `Stream`: the handshake, then `SSL_read` into the loop's scratch buffer
/// and `SSL_write` from `output`, with the same delegate calls and the same flow control as
/// plain streams. Syscalls: read-ahead lets one `read(2)` take what the socket holds, and
/// `output` is written in records of up to 16 KiB (one `write(2)` each), so a small response
/// head and body leave in one record.
extension Stream {
    /// A plain-HTTP request on this port is answered with this (in the clear) and closed.
    private static let plainHTTPAnswer = Array((
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 43\r\n"
            + "Connection: close\r\n\r\nThis port speaks HTTPS; use an https:// URL\n").utf8)

    /// Ends the sending direction after everything queued was written: a TLS `close_notify`
    /// first (so the client can tell a complete response from a truncated one), then
    /// `shutdown(SHUT_WR)`.
    public func shutdownWrite() {
        guard !isClosed else { return }
        if let ssl = tls?.ssl, tls?.handshaking == false {
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
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
                // now, or no readiness would report them. Then stop without another read(2).
                if SSL_has_pending(ssl) == 1 { continue }
                break
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                break
            case SSL_ERROR_WANT_WRITE:
                tls!.readWantsWrite = true
                armWrite()
            case SSL_ERROR_ZERO_RETURN:
                ended = 0  // close_notify: the client finished sending
            case SSL_ERROR_SYSCALL:
                ended = count == 0 ? 0 : (errno == 0 ? ECONNRESET : errno)
                if ended == EAGAIN || ended == EINTR { ended = nil }
            default:
                ended = EPROTO
            }
            ERR_clear_error()
            break
        }
        if total > 0 {
            delegate?.stream(self, didRead: total, error: 0)
            if isClosed { return }
        }
        if tls!.writeWantsRead, pendingOutput > 0 {
            tls!.writeWantsRead = false
            if flushTLS() != 0 { return fail(EPIPE) }
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
        if tls!.readWantsWrite {
            tls!.readWantsWrite = false
            readTLS()
            if isClosed { return }
        }
        let error = flushTLS()
        if error != 0 {
            delegate?.stream(self, didRead: 0, error: error)
        } else if pendingOutput == 0 {
            delegate?.streamDidDrain(self)
        }
    }

    /// Writes `output` as TLS records. 0, or an errno-like code for a failed connection.
    func flushTLS() -> Int32 {
        guard let ssl = tls?.ssl else { return EPIPE }
        guard !tls!.handshaking else { return 0 }  // queued until the handshake completes
        while true {
            let length = output.count
            if length == 0 { break }
            let chunk = min(length, 16 * 1024)
            guard let bytes = evbuffer_pullup(output.buffer, chunk) else { return ENOMEM }
            let written = SSL_write(ssl, bytes, Int32(chunk))
            if written > 0 {
                output.drain(Int(written))
                bytesWritten &+= UInt64(written)
                continue
            }
            let code = SSL_get_error(ssl, written)
            ERR_clear_error()
            switch code {
            case SSL_ERROR_WANT_WRITE:
                armWrite()
                return 0
            case SSL_ERROR_WANT_READ:
                tls!.writeWantsRead = true
                return 0
            case SSL_ERROR_SYSCALL:
                return errno == 0 ? EPIPE : errno
            default:
                return EPROTO
            }
        }
        if writeArmed && !tls!.readWantsWrite { disarmWrite() }
        return 0
    }

    /// Advances the handshake; true once it is complete (then the delegate was told).
    private func continueHandshake(_ ssl: OpaquePointer) -> Bool {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            tls!.handshaking = false
            if writeArmed && pendingOutput == 0 { disarmWrite() }
            delegate?.streamDidHandshake(self)
            return !isClosed
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ:
            if writeArmed { disarmWrite() }
        case SSL_ERROR_WANT_WRITE:
            armWrite()
        case SSL_ERROR_SYSCALL where result < 0 && (errno == EAGAIN || errno == EINTR):
            break
        default:
            if sidecar_is_http_request_error(ERR_peek_error()) == 1 {
                // Plain HTTP sent to the TLS port: say so in words the client can read.
                _ = Self.plainHTTPAnswer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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
