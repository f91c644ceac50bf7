import SidecarHTTP

/// A complete request as a service handler sees it: the parsed head, the whole (bounded)
/// body and the peer address.
public struct ServiceRequest: Sendable {
    public let head: HTTPRequestHead
    public let body: [UInt8]
    public let peer: SocketAddress
    /// The connection arrived over TLS.
    public let isSecure: Bool

    public init(head: HTTPRequestHead, body: [UInt8], peer: SocketAddress, isSecure: Bool) {
        self.head = head
        self.body = body
        self.peer = peer
        self.isSecure = isSecure
    }

    /// The method token exactly as received (`GET`, `POST`, …).
    public var method: String { head.string(head.methodRange) }

    /// The path as received (not decoded, not normalized).
    public var path: String { head.string(head.path) }

    /// The raw query without its `?`; nil when the target has none.
    public var query: String? { head.query.map(head.string) }

    /// The first value of a header, name compared ASCII case-insensitively.
    public func header(_ name: String) -> String? {
        headers(name).first
    }

    /// Every value of a header in order of arrival.
    public func headers(_ name: String) -> [String] {
        let wanted = Array(name.utf8).map(Self.lower)
        return head.fields.compactMap { field in
            let bytes = head.bytes(field.name)
            guard bytes.count == wanted.count, zip(bytes, wanted).allSatisfy({ Self.lower($0) == $1 }) else {
                return nil
            }
            return head.string(field.value)
        }
    }

    /// The media type of `Content-Type` in lower case, without parameters.
    public var mediaType: String? {
        guard let value = header("content-type") else { return nil }
        let type = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return type.trimmingSpaces.lowercased()
    }

    private static func lower(_ c: UInt8) -> UInt8 { c >= 0x41 && c <= 0x5A ? c | 0x20 : c }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return s
    }
}
