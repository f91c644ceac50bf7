import Glibc
import SidecarConfig

/// One request to a running sidecar's admin listener, blocking, as a command-line tool may:
/// connect (a wildcard address is asked on loopback), send, read until the server closes
/// (it answers one request per connection), all within `timeoutSeconds`.
struct AdminClient {
    let address: ListenAddress
    let token: Secret?
    var timeoutSeconds = 10

    struct Answer {
        let status: Int
        let body: String
    }

    func send(method: String, path: String) throws -> Answer {
        let fd = try connect()
        defer { Glibc.close(fd) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: sidecar-admin\r\nConnection: close\r\nContent-Length: 0\r\n"
        if let token { head += "Authorization: Bearer \(token.string)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw RuntimeFailure("admin listener \(address): send failed: \(String(cString: strerror(errno)))") }
            sent += n
        }
        bytes.removeAll()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count < 1 << 20 {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw RuntimeFailure("admin listener \(address): no answer: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += buffer[0..<n]
        }
        return try Self.parse(bytes, from: address)
    }

    private static func parse(_ bytes: [UInt8], from address: ListenAddress) throws -> Answer {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...max(0, bytes.count - 4)).first(where: { bytes.count >= 4 && Array(bytes[$0..<$0 + 4]) == separator }),
              bytes.starts(with: Array("HTTP/1.1 ".utf8)), bytes.count >= 12,
              let status = Int(String(decoding: bytes[9..<12], as: UTF8.self))
        else { throw RuntimeFailure("admin listener \(address): not an HTTP answer") }
        return Answer(status: status, body: String(decoding: bytes[(end + 4)...], as: UTF8.self))
    }

    private func connect() throws -> Int32 {
        switch address {
        case .unix(let path):
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            let capacity = MemoryLayout.size(ofValue: addr.sun_path)
            guard path.utf8.count < capacity else { throw RuntimeFailure("admin.listen: unix path too long") }
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                raw.copyBytes(from: path.utf8)
                raw[path.utf8.count] = 0
            }
            return try open(family: AF_UNIX) { fd in
                withUnsafePointer(to: &addr) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
            }
        case .tcp(let configured, let port):
            let host = configured == "0.0.0.0" ? "127.0.0.1" : configured == "::" ? "::1" : configured
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
                throw RuntimeFailure("admin.listen: cannot resolve \(host)")
            }
            defer { freeaddrinfo(result) }
            return try open(family: first.pointee.ai_family) { fd in
                Glibc.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen)
            }
        }
    }

    private func open(family: Int32, _ connectTo: (Int32) -> Int32) throws -> Int32 {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RuntimeFailure("socket: \(String(cString: strerror(errno)))") }
        var limit = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connectTo(fd) == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw RuntimeFailure("cannot reach the admin listener at \(address) (admin.listen; is the sidecar running?): \(why)")
        }
        return fd
    }
}
