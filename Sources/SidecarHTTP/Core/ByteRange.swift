/// A half-open range of byte offsets into a head's storage. UInt32 keeps fields small.
public struct ByteRange: Sendable, Hashable {
    public var start: UInt32
    public var end: UInt32

    @inlinable public init(start: Int, end: Int) {
        self.start = UInt32(truncatingIfNeeded: start)
        self.end = UInt32(truncatingIfNeeded: end)
    }

    @inlinable public var count: Int { Int(end &- start) }
    @inlinable public var isEmpty: Bool { end == start }
    @inlinable public var range: Range<Int> { Int(start)..<Int(end) }
}

/// One header field line: name and value (value trimmed of leading/trailing SP/HTAB).
public struct HTTPField: Sendable, Hashable {
    public var name: ByteRange
    public var value: ByteRange

    @inlinable public init(name: ByteRange, value: ByteRange) {
        self.name = name
        self.value = value
    }
}

public enum HTTPVersion: Sendable, Hashable {
    case http10, http11

    public var text: StaticString { self == .http11 ? "HTTP/1.1" : "HTTP/1.0" }
}

/// How the body that follows a head is delimited (RFC 9112 §6).
public enum BodyFraming: Sendable, Hashable {
    /// No body at all.
    case none
    /// Exactly this many bytes.
    case contentLength(UInt64)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// Responses only: the body runs until the upstream closes the connection.
    case untilClose
}

/// Connection-level semantics read from `Connection`, `Upgrade` and `Expect`.
public struct ConnectionSemantics: Sendable, Hashable {
    /// The connection may carry another message after this one.
    public var keepAlive: Bool
    /// `Connection: upgrade` together with an `Upgrade` header (HTTP/1.1 only).
    public var upgrade: Bool
    /// `Expect: 100-continue` (HTTP/1.1 requests only).
    public var expectContinue: Bool
    /// `Connection` lists an option other than `keep-alive` and `upgrade` (both hop-by-hop
    /// names anyway): fields of the names it lists are hop-by-hop too, so a proxy checks every
    /// field against the list (`ForwardedFields`), and only then.
    public var listsFieldNames: Bool

    public init(keepAlive: Bool, upgrade: Bool, expectContinue: Bool, listsFieldNames: Bool) {
        self.keepAlive = keepAlive
        self.upgrade = upgrade
        self.expectContinue = expectContinue
        self.listsFieldNames = listsFieldNames
    }
}

/// Limits applied while parsing a head.
public struct HTTPHeadLimits: Sendable, Hashable {
    /// Maximum bytes of a head, request/status line and final CRLF included.
    public var maxHeadBytes: Int
    /// Maximum number of header field lines.
    public var maxFields: Int

    public init(maxHeadBytes: Int = 16 * 1024, maxFields: Int = 100) {
        self.maxHeadBytes = max(16, min(maxHeadBytes, Int(UInt32.max >> 1)))
        self.maxFields = max(1, maxFields)
    }

    public static let `default` = HTTPHeadLimits()
}
