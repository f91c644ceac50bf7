import Glibc

/// A CIDR block (`10.0.0.0/8`, `::1/128`, or a bare address) for `trusted_proxies`.
public struct AddressRange: Sendable, Equatable {
    let network: [UInt8]
    let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let host = String(parts[0])
        var bytes = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET, host, &bytes) == 1 {
            bytes = Array(bytes[0..<4])
        } else if inet_pton(AF_INET6, host, &bytes) != 1 {
            return nil
        }
        let maxLength = bytes.count * 8
        var length = maxLength
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...maxLength).contains(parsed) else { return nil }
            length = parsed
        }
        network = bytes
        prefixLength = length
    }

    /// `address` as from `SocketAddress.ipBytes` (IPv4-mapped IPv6 already unmapped).
    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var bits = prefixLength
        var i = 0
        while bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> UInt8(bits))
            if address[i] & mask != network[i] & mask { return false }
            bits -= 8
            i += 1
        }
        return true
    }
}
