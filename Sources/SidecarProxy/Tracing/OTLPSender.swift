import Glibc
import SidecarConfig

/// One HTTP/1.1 POST to the collector per batch, on the exporter thread: a fresh connection
/// (`Connection: close`), non-blocking with every wait under one deadline, so a collector
/// that is down fails at once and one that hangs costs the exporter `timeoutMs` at most.
/// Only the status line of the answer is read.
struct OTLPSender {
    let endpoint: HTTPURL
    static let defaultTimeoutMs: Int64 = 2_000
    var timeoutMs: Int64 = OTLPSender.defaultTimeoutMs

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
        let headSent = Array(head.utf8).withUnsafeBytes { send($0, fd: fd, deadline: deadline) }
        if let why = headSent ?? send(body, fd: fd, deadline: deadline) { return .failed(why.text) }
        switch readStatus(fd: fd, deadline: deadline) {
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

    private func send(_ bytes: UnsafeRawBufferPointer, fd: Int32, deadline: Int64) -> Failure? {
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent > 0 {
                offset += sent
            } else if sent < 0, errno == EAGAIN || errno == EINTR {
                if let why = wait(fd, for: POLLOUT, deadline: deadline) { return why }
            } else {
                return .system("send", errno)
            }
        }
        return nil
    }

    /// The status code of the answer's first line.
    private func readStatus(fd: Int32, deadline: Int64) -> Result<Int, Failure> {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1024)
        while !received.contains(UInt8(ascii: "\n")) {
            guard received.count < 8 * 1024 else { return .failure(Failure(text: "answer without a status line")) }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[..<count]
            } else if count == 0 {
                return .failure(Failure(text: "connection closed before an answer"))
            } else if errno == EAGAIN || errno == EINTR {
                if let why = wait(fd, for: POLLIN, deadline: deadline) { return .failure(why) }
            } else {
                return .failure(.system("recv", errno))
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
