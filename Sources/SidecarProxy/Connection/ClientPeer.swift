import SidecarEvent
import SidecarHTTP

/// Who the client is, for everything that names or trusts it (the access line, forwarding
/// fields, the sign-in budget): the accepted peer, or with `proxy_protocol` the source its
/// header names, settled before any request is read; and, when the peer is a trusted proxy,
/// the client it names in `X-Forwarded-For`.
struct ClientPeer {
    /// The address as text.
    private(set) var text: [UInt8]
    /// A listed trusted proxy: what it says of the client in forwarding fields is believed.
    private(set) var trusted: Bool

    init(text: [UInt8], trusted: Bool) {
        self.text = text
        self.trusted = trusted
    }

    /// The header's source is the client from now on; it is trusted only if it is itself a
    /// listed proxy (the balancer is, the browser behind it normally is not).
    ///
    /// A header that names no client (`UNKNOWN`, `LOCAL`, a unix or unspecified family)
    /// leaves the address the balancer's (the access line, the sign-in budget) but drops its
    /// trust: whoever is behind it may be anyone (a relay, a misrouted client), and the
    /// balancer's trust is its own, not its client's. What that client says of itself in
    /// forwarding fields is then stripped, as from any untrusted peer.
    mutating func adopt(_ source: ProxyProtocolHeader.Source, isTrusted: (_ address: [UInt8]) -> Bool) {
        guard case .client(let address, _) = source else {
            trusted = false
            return
        }
        let unmapped = Self.isIPv4Mapped(address) ? Array(address[12...]) : address
        guard let text = ProxyProtocolHeader.text(of: unmapped) else {
            trusted = false
            return
        }
        self.text = Array(text.utf8)
        trusted = isTrusted(unmapped)
    }

    /// `::ffff:a.b.c.d`: written as IPv4, as accepted peers are (`SocketAddress.ipBytes`).
    private static func isIPv4Mapped(_ address: [UInt8]) -> Bool {
        address.count == 16 && address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xff && address[11] == 0xff
    }

    /// The client as the trusted proxy in front saw it: the last entry of the last
    /// `X-Forwarded-For` field (a proxy may add its own field after the client's, as HAProxy's
    /// `option forwardfor` does, and only what the proxy added is trusted). Borrowed from `view`.
    static func forwardedClient(in view: HeadView) -> UnsafeRawBufferPointer? {
        var forwarded: ByteRange?
        for field in view.fields where !field.value.isEmpty && view.name(of: field, is: "x-forwarded-for") {
            forwarded = field.value
        }
        return forwarded.flatMap { lastForwardedAddress(view[$0]) }
    }

    /// The address the trusted proxy in front saw (the last `X-Forwarded-For` entry).
    static func lastForwardedAddress(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        let start = (value.lastIndex(of: UInt8(ascii: ",")).map { $0 + 1 }) ?? 0
        var lower = start, upper = value.count
        while lower < upper, value[lower] == UInt8(ascii: " ") || value[lower] == UInt8(ascii: "\t") { lower += 1 }
        while upper > lower, value[upper - 1] == UInt8(ascii: " ") || value[upper - 1] == UInt8(ascii: "\t") { upper -= 1 }
        return lower == upper ? nil : UnsafeRawBufferPointer(rebasing: value[lower..<upper])
    }
}
