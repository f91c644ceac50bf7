import Glibc

/// The header an L4 load balancer (AWS NLB, haproxy `send-proxy`, nginx `proxy_protocol`,
/// Google Cloud's TCP proxy) writes before a connection's first byte to say whom it accepted
/// it from: haproxy's PROXY protocol, version 1 (one text line) and version 2 (binary).
///
/// Parsed strictly, as haproxy itself does: one space between fields, addresses of the family
/// named, ports without leading zeros, `\r\n` only, a v2 address block as long as its family
/// needs and TLVs that fit their block (their contents are ignored). `LOCAL` (v2), `UNKNOWN`
/// (v1) and unspecified or unix families name no client: the peer's address stands for it, but
/// not the peer's trust (`ClientConnection.distrustUnnamedClient`).
public struct ProxyProtocolHeader: Equatable, Sendable {
    public enum Source: Equatable, Sendable {
        /// No client named: use the connection's own peer address, as an untrusted client's.
        case peer
        /// `address` is 4 (IPv4) or 16 (IPv6) bytes in network order.
        case client(address: [UInt8], port: UInt16)
    }

    public let source: Source
    /// Bytes the header took from the start of the stream; what follows is the client's.
    public let length: Int

    /// The longest v1 line the specification allows, `\r\n` included.
    public static let maxTextLength = 107
    /// The largest v2 header accepted: 16 bytes, the addresses and up to 2 KiB of TLVs
    /// (balancers send tens of bytes: a VPC endpoint id, an ALPN, a unique id).
    public static let maxBinaryLength = 16 + 216 + 2048

    public enum ParseResult: Equatable, Sendable {
        case needMore
        case header(ProxyProtocolHeader)
        /// Why the bytes are not a PROXY header (for the log; the connection is closed).
        case invalid(String)
    }

    static let binarySignature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    static let textSignature: [UInt8] = Array("PROXY ".utf8)

    /// Reads a header from the start of `bytes` (what has arrived so far).
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        guard let first = bytes.first else { return .needMore }
        if first == binarySignature[0] {
            return parseBinary(bytes)
        }
        if first == textSignature[0] {
            return parseText(bytes)
        }
        return .invalid("no PROXY protocol header")
    }

    /// The client's address as text (`192.0.2.1`, `2001:db8::1`); nil for `.peer`.
    public var clientText: String? {
        guard case .client(let address, _) = source else { return nil }
        return Self.text(of: address)
    }

    /// `address`: 4 (IPv4) or 16 (IPv6) bytes in network order.
    public static func text(of address: [UInt8]) -> String? {
        var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &out, socklen_t(out.count)) != nil }
        return ok ? String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    // MARK: version 2

    private static func parseBinary(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        for (i, expected) in binarySignature.enumerated() {
            guard i < bytes.count else { return .needMore }
            guard bytes[i] == expected else { return .invalid("no PROXY protocol header") }
        }
        guard bytes.count >= 16 else { return .needMore }
        let versionCommand = bytes[12], family = bytes[13]
        guard versionCommand >> 4 == 2 else { return .invalid("PROXY v2 header of version \(versionCommand >> 4)") }
        let command = versionCommand & 0x0F
        guard command <= 1 else { return .invalid("PROXY v2 header with command \(command)") }
        let blockLength = Int(bytes[14]) << 8 | Int(bytes[15])
        let total = 16 + blockLength
        guard total <= maxBinaryLength else { return .invalid("PROXY v2 header of \(total) bytes") }
        guard bytes.count >= total else { return .needMore }

        let addressLength: Int
        switch family {
        case 0x11: addressLength = 12  // TCP over IPv4
        case 0x21: addressLength = 36  // TCP over IPv6
        case 0x31: addressLength = 216  // unix stream: the balancer speaks for itself
        case 0x00: addressLength = blockLength  // unspecified: the block is to be ignored
        case 0x12, 0x22, 0x32: return .invalid("PROXY v2 header for a datagram connection")
        default: return .invalid("PROXY v2 header of family \(family)")
        }
        guard blockLength >= addressLength else { return .invalid("PROXY v2 address block too short") }
        var offset = 16 + addressLength
        while offset < total {
            guard total - offset >= 3 else { return .invalid("PROXY v2 TLV truncated") }
            let valueLength = Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            guard total - offset - 3 >= valueLength else { return .invalid("PROXY v2 TLV longer than its block") }
            offset += 3 + valueLength
        }
        guard command == 1, family == 0x11 || family == 0x21 else {
            return .header(ProxyProtocolHeader(source: .peer, length: total))
        }
        let size = family == 0x11 ? 4 : 16
        let address = Array(bytes[16..<(16 + size)])
        let portOffset = 16 + 2 * size
        let port = UInt16(bytes[portOffset]) << 8 | UInt16(bytes[portOffset + 1])
        return .header(ProxyProtocolHeader(source: .client(address: address, port: port), length: total))
    }

    // MARK: version 1

    private static func parseText(_ bytes: UnsafeRawBufferPointer) -> ParseResult {
        for (i, expected) in textSignature.enumerated() {
            guard i < bytes.count else { return .needMore }
            guard bytes[i] == expected else { return .invalid("no PROXY protocol header") }
        }
        let limit = min(bytes.count, maxTextLength)
        var lineEnd = -1
        for i in textSignature.count..<limit where bytes[i] == 0x0A {
            lineEnd = i
            break
        }
        guard lineEnd >= 0 else {
            return bytes.count >= maxTextLength ? .invalid("PROXY v1 line longer than 107 bytes") : .needMore
        }
        guard lineEnd > 0, bytes[lineEnd - 1] == 0x0D else { return .invalid("PROXY v1 line not ended by CRLF") }
        let line = Array(bytes[textSignature.count..<(lineEnd - 1)])
        let fields = line.split(separator: 0x20, omittingEmptySubsequences: false).map { Array($0) }
        let length = lineEnd + 1
        switch fields.first.map({ String(decoding: $0, as: UTF8.self) }) {
        case "UNKNOWN":
            return .header(ProxyProtocolHeader(source: .peer, length: length))
        case "TCP4", "TCP6":
            guard fields.count == 5 else { return .invalid("PROXY v1 line with \(fields.count) fields") }
            let family = fields[0] == Array("TCP4".utf8) ? AF_INET : AF_INET6
            guard let source = address(fields[1], family: family), address(fields[2], family: family) != nil else {
                return .invalid("PROXY v1 address not of its family")
            }
            guard let sourcePort = port(fields[3]), port(fields[4]) != nil else {
                return .invalid("PROXY v1 port out of range")
            }
            return .header(ProxyProtocolHeader(source: .client(address: source, port: sourcePort), length: length))
        default:
            return .invalid("PROXY v1 line of an unknown protocol")
        }
    }

    private static func address(_ text: [UInt8], family: Int32) -> [UInt8]? {
        guard !text.isEmpty, text.count < Int(INET6_ADDRSTRLEN) else { return nil }
        var out = [UInt8](repeating: 0, count: family == AF_INET ? 4 : 16)
        let string = String(decoding: text, as: UTF8.self)
        return inet_pton(family, string, &out) == 1 ? out : nil
    }

    /// 0–65535 in decimal, without a sign or leading zeros.
    private static func port(_ text: [UInt8]) -> UInt16? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard text.count == 1 || text[0] != 0x30 else { return nil }
        let value = text.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return value <= 65535 ? UInt16(value) : nil
    }
}
