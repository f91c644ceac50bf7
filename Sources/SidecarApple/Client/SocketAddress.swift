import CEvent
import Glibc

/// An IPv4 or IPv6 socket address to connect to.
struct SocketAddress {
    private var storage = sockaddr_storage()
    private let length: socklen_t

    init?(_ address: UnsafeMutablePointer<sockaddr>?, length: socklen_t) {
        guard let address, length > 0, Int(length) <= MemoryLayout<sockaddr_storage>.size,
              address.pointee.sa_family == AF_INET || address.pointee.sa_family == AF_INET6
        else { return nil }
        self.length = length
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
        }
    }

    private init(v4 address: in_addr, port: UInt16) {
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = port.bigEndian
        sin.sin_addr = address
        length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutableBytes(of: &storage) { dst in
            withUnsafeBytes(of: sin) { dst.copyMemory(from: $0) }
        }
    }

    private init(v6 address: in6_addr, port: UInt16) {
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        sin6.sin6_port = port.bigEndian
        sin6.sin6_addr = address
        length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        withUnsafeMutableBytes(of: &storage) { dst in
            withUnsafeBytes(of: sin6) { dst.copyMemory(from: $0) }
        }
    }

    /// The address of an IP literal host; nil for a name.
    static func literal(_ host: String, port: UInt16) -> SocketAddress? {
        if let v4 = AppleEndpoint.ipv4Literal(host) { return SocketAddress(v4: v4, port: port) }
        if let v6 = AppleEndpoint.ipv6Literal(host) { return SocketAddress(v6: v6, port: port) }
        return nil
    }

    /// `localhost` without DNS: 127.0.0.1, then ::1.
    static func loopback(port: UInt16) -> [SocketAddress] {
        [literal("127.0.0.1", port: port), literal("::1", port: port)].compactMap { $0 }
    }

    func withSockaddr<R>(_ body: (UnsafeMutablePointer<sockaddr>, Int32) -> R) -> R {
        var copy = storage
        return withUnsafeMutableBytes(of: &copy) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), Int32(length))
        }
    }

    /// Whether the socket completed its TCP connect (it has a peer).
    static func isConnected(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        var peer = sockaddr_storage()
        var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutableBytes(of: &peer) { raw in
            getpeername(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &size) == 0
        }
    }
}
