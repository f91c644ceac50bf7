import COpenSSL
import Glibc
import SidecarConfig
import SidecarEvent

/// A connection to the collector, plain or through TLS, on the exporter thread: non-blocking,
/// and every wait — TCP connect, TLS handshake, send, answer — under the caller's deadline, so
/// a collector that is down fails at once and one that hangs costs the exporter its time-out
/// at most. An `https` endpoint is verified like the sidecar's other TLS clients: the
/// certificate against the system store and the configured CA file, and the host name.
/// Kept between posts while the collector keeps it open (`OTLPSender`).
final class OTLPConnection {
    let fd: Int32
    private var ssl: OpaquePointer?
    /// For the time-out's message.
    private let timeoutMs: Int64

    struct Failure: Error {
        let text: String
        static func system(_ call: String, _ code: Int32) -> Failure {
            Failure(text: "\(call): \(String(cString: strerror(code)))")
        }
    }

    private init(fd: Int32, timeoutMs: Int64) {
        self.fd = fd
        self.timeoutMs = timeoutMs
    }

    deinit {
        if let ssl { SSL_free(ssl) }  // before the descriptor it uses is closed
        Glibc.close(fd)
    }

    /// Connects (and for `https` shakes hands) by `deadline`.
    static func open(
        _ endpoint: HTTPURL, tls: TLSClientContext?, deadline: Int64, timeoutMs: Int64
    ) -> Result<OTLPConnection, Failure> {
        let connection: OTLPConnection
        switch connect(endpoint, deadline: deadline, timeoutMs: timeoutMs) {
        case .success(let fd): connection = OTLPConnection(fd: fd, timeoutMs: timeoutMs)
        case .failure(let why): return .failure(why)
        }
        // Head and body in two sends: with Nagle off, the body's last segment goes at once.
        var on: Int32 = 1
        setsockopt(connection.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        if endpoint.isHTTPS {
            guard let tls else { return .failure(Failure(text: "no TLS context for \(endpoint.origin)")) }
            if let why = connection.handshake(host: endpoint.host, tls: tls, deadline: deadline) { return .failure(why) }
        }
        return .success(connection)
    }

    /// Whether the collector closed the connection (or sent something unasked) since its last
    /// answer: then it is not used again.
    var isStale: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) != 0
    }

    /// The TLS client handshake on the connected socket, waiting under the same deadline.
    /// A certificate that does not verify (untrusted, expired, another host's) fails it.
    private func handshake(host: String, tls: TLSClientContext, deadline: Int64) -> Failure? {
        guard let made = tls.makeSSL(host: host, isIPLiteral: HostName.isIPLiteral(host)) else {
            ERR_clear_error()
            return Failure(text: "TLS setup for \(host) failed")
        }
        ssl = made
        guard SSL_set_fd(made, fd) == 1 else {
            ERR_clear_error()
            return Failure(text: "TLS setup for \(host) failed")
        }
        while true {
            ERR_clear_error()
            let result = SSL_connect(made)
            if result == 1 { return nil }
            let code = SSL_get_error(made, result)
            let waitFor: Int32
            switch code {
            case SSL_ERROR_WANT_READ: waitFor = Int32(POLLIN)
            case SSL_ERROR_WANT_WRITE: waitFor = Int32(POLLOUT)
            case SSL_ERROR_SYSCALL where errno == EINTR: continue
            default: return Self.handshakeFailure(made, host: host, code: code)
            }
            if let why = wait(for: waitFor, deadline: deadline) { return Failure(text: "TLS handshake: \(why.text)") }
        }
    }

    private static func handshakeFailure(_ ssl: OpaquePointer, host: String, code: Int32) -> Failure {
        defer { ERR_clear_error() }
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
            let reason = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "error \(verify)"
            return Failure(text: "TLS certificate of \(host) not verified: \(reason)")
        }
        if let reason = ERR_reason_error_string(ERR_peek_last_error()) {
            return Failure(text: "TLS handshake with \(host) failed: \(String(cString: reason))")
        }
        if code == SSL_ERROR_SYSCALL, errno != 0 { return .system("TLS handshake", errno) }
        return Failure(text: "TLS handshake with \(host) failed: connection closed")
    }

    /// One write or read at a time, or what to wait for.
    enum Step {
        case moved(Int)
        case wait(Int32)
        case closed
        case failed(Failure)
    }

    private func write(_ bytes: UnsafeRawPointer, count: Int) -> Step {
        guard let ssl else {
            let sent = Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
            if sent > 0 { return .moved(sent) }
            if sent < 0, errno == EAGAIN || errno == EINTR { return .wait(Int32(POLLOUT)) }
            return .failed(.system("send", errno))
        }
        ERR_clear_error()
        // A write that must wait is retried with the same bytes, as OpenSSL requires.
        let written = SSL_write(ssl, bytes, Int32(min(count, 16 * 1024)))
        return written > 0 ? .moved(Int(written)) : Self.step(ssl, written, "TLS send")
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Step {
        guard let ssl else {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .moved(count) }
            if count == 0 { return .closed }
            if errno == EAGAIN || errno == EINTR { return .wait(Int32(POLLIN)) }
            return .failed(.system("recv", errno))
        }
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        return count > 0 ? .moved(Int(count)) : Self.step(ssl, count, "TLS receive")
    }

    private static func step(_ ssl: OpaquePointer, _ result: Int32, _ what: String) -> Step {
        let code = SSL_get_error(ssl, result)
        defer { ERR_clear_error() }
        switch code {
        case SSL_ERROR_WANT_READ: return .wait(Int32(POLLIN))
        case SSL_ERROR_WANT_WRITE: return .wait(Int32(POLLOUT))
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL where errno != 0: return .failed(.system(what, errno))
        default:
            let reason = ERR_reason_error_string(ERR_peek_last_error()).map { String(cString: $0) } ?? "failed"
            return .failed(Failure(text: "\(what): \(reason)"))
        }
    }

    private static func connect(_ endpoint: HTTPURL, deadline: Int64, timeoutMs: Int64) -> Result<Int32, Failure> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list)
        guard rc == 0, let first = list else {
            return .failure(Failure(text: "resolving \(endpoint.host): \(String(cString: gai_strerror(rc)))"))
        }
        defer { freeaddrinfo(list) }
        var failure = Failure(text: "no address for \(endpoint.host)")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                            | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                failure = .system("socket", errno)
                continue
            }
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return .success(fd) }
            guard errno == EINPROGRESS else {
                failure = .system("connect", errno)
                Glibc.close(fd)
                continue
            }
            if let why = wait(fd, for: POLLOUT, deadline: deadline, timeoutMs: timeoutMs) {
                failure = why
                Glibc.close(fd)
                continue
            }
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            if code == 0 { return .success(fd) }
            failure = .system("connect", code)
            Glibc.close(fd)
        }
        return .failure(failure)
    }

    func send(_ bytes: UnsafeRawBufferPointer, deadline: Int64) -> Failure? {
        var offset = 0
        while offset < bytes.count {
            switch write(bytes.baseAddress! + offset, count: bytes.count - offset) {
            case .moved(let count): offset += count
            case .wait(let event): if let why = wait(for: event, deadline: deadline) { return why }
            case .closed: return Failure(text: "connection closed while sending")
            case .failed(let why): return why
            }
        }
        return nil
    }

    func wait(for event: Int32, deadline: Int64) -> Failure? {
        Self.wait(fd, for: event, deadline: deadline, timeoutMs: timeoutMs)
    }

    private static func wait(_ fd: Int32, for event: Int32, deadline: Int64, timeoutMs: Int64) -> Failure? {
        while true {
            let left = deadline - OTLPSender.monotonicMs()
            guard left > 0 else { return Failure(text: "timed out after \(timeoutMs) ms") }
            var entry = pollfd(fd: fd, events: Int16(event), revents: 0)
            let ready = poll(&entry, 1, Int32(left))
            if ready > 0 { return nil }
            if ready < 0, errno != EINTR { return .system("poll", errno) }
        }
    }
}
