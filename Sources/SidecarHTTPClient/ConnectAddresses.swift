import Glibc
import SidecarEvent

/// How the Apple client turns `apple.base_url`'s host into addresses to try, without DNS for
/// IP literals and `localhost`.
extension SocketAddress {
    /// The address of an IP literal host; nil for a name.
    static func literal(_ host: String, port: UInt16) -> SocketAddress? {
        var storage = sockaddr_storage()
        if let v4 = AppleEndpoint.ipv4Literal(host) {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = v4
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: sin) { dst.copyMemory(from: $0) } }
            return SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        }
        if let v6 = AppleEndpoint.ipv6Literal(host) {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            sin6.sin6_addr = v6
            withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: sin6) { dst.copyMemory(from: $0) } }
            return SocketAddress(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
        return nil
    }

    /// `localhost` without DNS: 127.0.0.1, then ::1.
    static func loopback(port: UInt16) -> [SocketAddress] {
        [literal("127.0.0.1", port: port), literal("::1", port: port)].compactMap { $0 }
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
