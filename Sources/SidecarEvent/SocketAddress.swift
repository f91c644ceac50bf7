import CEvent
import Glibc

/// A resolved socket address: IPv4, IPv6 or a Unix-domain path.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable { case inet, inet6, unix }

    private var storage = sockaddr_storage()
    public private(set) var length: socklen_t = 0

    public var family: Family {
        switch Int32(storage.ss_family) {
        case AF_INET: return .inet
        case AF_INET6: return .inet6
        default: return .unix
        }
    }

    /// Parses `host:port`, `[v6]:port` or `unix:/path`. Host names are resolved once
    /// (blocking getaddrinfo: call at start-up, never on a loop).
    public init(parsing text: String) throws(EventError) {
        if text.hasPrefix("unix:") {
            try self.init(unixPath: String(text.dropFirst(5)))
            return
        }
        guard let colon = text.lastIndex(of: ":") else { throw .address(text) }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = UInt16(portText) else { throw .address(text) }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty || host == "*" { host = "0.0.0.0" }
        try self.init(host: host, port: port)
    }

    public init(host: String, port: UInt16) throws(EventError) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw .address("\(host):\(port)")
        }
        defer { freeaddrinfo(result) }
        withUnsafeMutableBytes(of: &storage) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr,
                                                         count: Int(first.pointee.ai_addrlen)))
        }
        length = first.pointee.ai_addrlen
    }

    public init(unixPath path: String) throws(EventError) {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw .address("unix:" + path)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        withUnsafeMutableBytes(of: &storage) { dst in
            withUnsafeBytes(of: addr) { dst.copyMemory(from: $0) }
        }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
    }

    /// Wraps an address the kernel filled in (accept, getsockname).
    public init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }

    /// IPv4 (4 bytes) or IPv6 (16 bytes) address bytes; IPv4-mapped IPv6 is reported as IPv4.
    public var ipBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case .inet:
                let offset = MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!
                return Array(raw[offset..<offset + 4])
            case .inet6:
                let offset = MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!
                let bytes = Array(raw[offset..<offset + 16])
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                    return Array(bytes[12..<16])
                }
                return bytes
            case .unix:
                return []
            }
        }
    }

    /// The address without port, as text (`127.0.0.1`, `::1`); empty for Unix sockets.
    public var ipText: String {
        let bytes = ipBytes
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard !bytes.isEmpty, inet_ntop(family, bytes, &buffer, 64) != nil else { return "" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    public var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case .inet: return UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
            case .inet6: return UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
            case .unix: return 0
            }
        }
    }

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        guard a.length == b.length else { return false }
        return withUnsafeBytes(of: a.storage) { x in
            withUnsafeBytes(of: b.storage) { y in
                x.prefix(Int(a.length)).elementsEqual(y.prefix(Int(b.length)))
            }
        }
    }

    public var description: String {
        switch family {
        case .inet: return "\(ipText):\(port)"
        case .inet6: return "[\(ipText)]:\(port)"
        case .unix: return "unix socket"
        }
    }
}
