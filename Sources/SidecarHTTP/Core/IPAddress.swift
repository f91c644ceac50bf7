#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address in numeric form, cheap to compare on the request path.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// Host byte order.
    case v4(UInt32)
    /// Network order split into two big-endian halves.
    case v6(high: UInt64, low: UInt64)

    /// Parses a dotted-quad IPv4 or an IPv6 literal (no brackets, no zone).
    public init?(_ text: String) {
        guard !text.utf8.contains(0) else { return nil }
        if text.contains(":") {
            var raw = in6_addr()
            guard inet_pton(AF_INET6, text, &raw) == 1 else { return nil }
            self.init(ipv6Bytes: withUnsafeBytes(of: &raw) { Array($0) })
        } else {
            var raw = in_addr()
            guard Self.isDottedQuad(text), inet_pton(AF_INET, text, &raw) == 1 else { return nil }
            self = .v4(UInt32(bigEndian: raw.s_addr))
        }
    }

    /// From 4 or 16 bytes in network order.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: self = .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16: self.init(ipv6Bytes: Array(bytes))
        default: return nil
        }
    }

    private init(ipv6Bytes bytes: [UInt8]) {
        let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        self = .v6(high: high, low: low)
    }

    /// `::ffff:a.b.c.d` as the IPv4 address it carries, otherwise self.
    public var unmapped: IPAddress {
        if case .v6(0, let low) = self, low >> 32 == 0xffff { return .v4(UInt32(truncatingIfNeeded: low)) }
        return self
    }

    public var isLoopback: Bool {
        switch unmapped {
        case .v4(let value): return value >> 24 == 127
        case .v6(let high, let low): return high == 0 && low == 1
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            let octets: [UInt32] = [value >> 24, value >> 16 & 0xff, value >> 8 & 0xff, value & 0xff]
            return octets.map(String.init).joined(separator: ".")
        case .v6(let high, let low):
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { buffer in
                for index in 0..<8 {
                    buffer[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                    buffer[index + 8] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
                }
            }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil else { return "::" }
            return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// inet_pton accepts exactly four decimal parts; reject leading zeros that other tools read as octal.
    private static func isDottedQuad(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
                && !(part.count > 1 && part.first == "0")
        }
    }
}

/// An address block such as `10.0.0.0/8` or `fd00::/8`; a bare address is a single host.
public struct CIDR: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    public init?(_ text: String) { self.init(text, maskingHostBits: false) }

    /// With `maskingHostBits`, `10.0.0.1/8` becomes `10.0.0.0/8` instead of failing.
    public init?(_ text: String, maskingHostBits: Bool) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let maxLength = if case .v4 = address { 32 } else { 128 }
        var length = maxLength
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].count <= 3, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                  let parsed = Int(parts[1]), parsed <= maxLength else { return nil }
            length = parsed
        }
        // Host bits set (`10.0.0.1/8`) is almost always a typo: refuse rather than guess.
        let masked = Self.masked(address, length)
        guard maskingHostBits || masked == address else { return nil }
        network = masked
        prefixLength = length
    }

    /// Whether `address` lies in this block; IPv4-mapped IPv6 addresses match IPv4 blocks.
    public func contains(_ address: IPAddress) -> Bool {
        let candidate = if case .v4 = network { address.unmapped } else { address }
        switch (network, candidate) {
        case (.v4, .v4), (.v6, .v6): return Self.masked(candidate, prefixLength) == network
        default: return false
        }
    }

    public var description: String { "\(network)/\(prefixLength)" }

    private static func masked(_ address: IPAddress, _ length: Int) -> IPAddress {
        switch address {
        case .v4(let value):
            return .v4(length == 0 ? 0 : value & (UInt32.max << (32 - length)))
        case .v6(let high, let low):
            let highMask: UInt64 = length >= 64 ? .max : (length == 0 ? 0 : .max << (64 - length))
            let lowMask: UInt64 = length <= 64 ? 0 : (length == 128 ? .max : .max << (128 - length))
            return .v6(high: high & highMask, low: low & lowMask)
        }
    }
}
