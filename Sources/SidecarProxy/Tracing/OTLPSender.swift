import COpenSSL
import Glibc
import SidecarConfig
import SidecarEvent

/// One HTTP/1.1 POST to the collector per batch, on the exporter thread: a fresh connection
/// (`Connection: close`), non-blocking with every wait — TCP connect, TLS handshake, send,
/// answer — under one deadline, so a collector that is down fails at once and one that hangs
/// costs the exporter `timeoutMs` at most. Only the status line of the answer is read.
/// An `https` endpoint is verified like the sidecar's other TLS clients (`tls`): the
/// certificate against the system store and the configured CA file, and the host name.
struct OTLPSender {
    let endpoint: HTTPURL
    /// The verifying context for an `https` endpoint; unused for `http`.
    var tls: TLSClientContext?
    static let defaultTimeoutMs: Int64 = 2_000
    var timeoutMs: Int64 = OTLPSender.defaultTimeoutMs

    init(endpoint: HTTPURL, tls: TLSClientContext? = nil, timeoutMs: Int64 = OTLPSender.defaultTimeoutMs) {
        self.endpoint = endpoint
        self.tls = tls
        self.timeoutMs = timeoutMs
    }

    enum Outcome: Equatable {
        /// A 2xx answer.
        case accepted
        case rejected(status: Int)
        case failed(String)
    }

    func post(_ body: UnsafeRawBufferPointer) -> Outcome {
        let deadline = Self.monotonicMs() + timeoutMs
        var head = "POST \(endpoint.path) HTTP/1.1\r\nHost: \(endpoint.authority)\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let fd: Int32
        switch connect(deadline: deadline) {
        case .success(let opened): fd = opened
        case .failure(let why): return .failed(why.text)
        }
        defer { Glibc.close(fd) }
        // Head and body in two sends: with Nagle off, the body's last segment goes at once.
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        var link = Link(fd: fd)
        if endpoint.isHTTPS {
            guard let tls else { return .failed("no TLS context for \(endpoint.origin)") }
            switch handshake(fd: fd, tls: tls, deadline: deadline) {
            case .success(let ssl): link.ssl = ssl
            case .failure(let why): return .failed(why.text)
            }
        }
        // Freed before the descriptor is closed (defers run last first).
        defer { if let ssl = link.ssl { SSL_free(ssl) } }
        let headSent = Array(head.utf8).withUnsafeBytes { send($0, over: link, deadline: deadline) }
        if let why = headSent ?? send(body, over: link, deadline: deadline) { return .failed(why.text) }
        switch readStatus(over: link, deadline: deadline) {
        case .success(let status): return (200..<300).contains(status) ? .accepted : .rejected(status: status)
        case .failure(let why): return .failed(why.text)
        }
    }

    struct Failure: Error {
        let text: String
        static func system(_ call: String, _ code: Int32) -> Failure {
            Failure(text: "\(call): \(String(cString: strerror(code)))")
        }
    }

    /// The TLS client handshake on the connected socket, waiting under the same deadline.
    /// A certificate that does not verify (untrusted, expired, another host's) fails it.
    private func handshake(fd: Int32, tls: TLSClientContext, deadline: Int64) -> Result<OpaquePointer, Failure> {
        let host = endpoint.host
        guard let ssl = tls.makeSSL(host: host, isIPLiteral: HostName.isIPLiteral(host)) else {
            ERR_clear_error()
            return .failure(Failure(text: "TLS setup for \(host) failed"))
        }
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            ERR_clear_error()
            return .failure(Failure(text: "TLS setup for \(host) failed"))
        }
        while true {
            ERR_clear_error()
            let result = SSL_connect(ssl)
            if result == 1 { return .success(ssl) }
            let code = SSL_get_error(ssl, result)
            let waitFor: Int32
            switch code {
            case SSL_ERROR_WANT_READ: waitFor = Int32(POLLIN)
            case SSL_ERROR_WANT_WRITE: waitFor = Int32(POLLOUT)
            case SSL_ERROR_SYSCALL where errno == EINTR: continue
            default:
                let failure = Self.handshakeFailure(ssl, host: host, code: code)
                SSL_free(ssl)
                return .failure(failure)
            }
            if let why = wait(fd, for: waitFor, deadline: deadline) {
                SSL_free(ssl)
                return .failure(Failure(text: "TLS handshake: \(why.text)"))
            }
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

    /// The connection, plain or through TLS: one write or read at a time, or what to wait for.
    private struct Link {
        let fd: Int32
        var ssl: OpaquePointer?

        enum Step {
            case moved(Int)
            case wait(Int32)
            case closed
            case failed(Failure)
        }

        func write(_ bytes: UnsafeRawPointer, count: Int) -> Step {
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
    }

    private func connect(deadline: Int64) -> Result<Int32, Failure> {
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
            if let why = wait(fd, for: POLLOUT, deadline: deadline) {
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

    private func send(_ bytes: UnsafeRawBufferPointer, over link: Link, deadline: Int64) -> Failure? {
        var offset = 0
        while offset < bytes.count {
            switch link.write(bytes.baseAddress! + offset, count: bytes.count - offset) {
            case .moved(let count): offset += count
            case .wait(let event): if let why = wait(link.fd, for: event, deadline: deadline) { return why }
            case .closed: return Failure(text: "connection closed while sending")
            case .failed(let why): return why
            }
        }
        return nil
    }

    /// The status code of the answer's first line.
    private func readStatus(over link: Link, deadline: Int64) -> Result<Int, Failure> {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !received.contains(UInt8(ascii: "\n")) {
            guard received.count < 8 * 1024 else { return .failure(Failure(text: "answer without a status line")) }
            switch chunk.withUnsafeMutableBytes({ link.read(into: $0) }) {
            case .moved(let count): received += chunk[..<count]
            case .closed: return .failure(Failure(text: "connection closed before an answer"))
            case .wait(let event): if let why = wait(link.fd, for: event, deadline: deadline) { return .failure(why) }
            case .failed(let why): return .failure(why)
            }
        }
        return Self.status(ofLine: received).map { .success($0) } ?? .failure(Failure(text: "answer is not HTTP"))
    }

    /// `HTTP/1.x NNN …`: the three digits.
    static func status(ofLine bytes: [UInt8]) -> Int? {
        guard bytes.count >= 12, bytes.starts(with: Array("HTTP/1.".utf8)), bytes[8] == UInt8(ascii: " ") else {
            return nil
        }
        var status = 0
        for byte in bytes[9..<12] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return status
    }

    private func wait(_ fd: Int32, for event: Int32, deadline: Int64) -> Failure? {
        while true {
            let left = deadline - Self.monotonicMs()
            guard left > 0 else { return Failure(text: "timed out after \(timeoutMs) ms") }
            var entry = pollfd(fd: fd, events: Int16(event), revents: 0)
            let ready = poll(&entry, 1, Int32(left))
            if ready > 0 { return nil }
            if ready < 0, errno != EINTR { return .system("poll", errno) }
        }
    }

    static func monotonicMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
