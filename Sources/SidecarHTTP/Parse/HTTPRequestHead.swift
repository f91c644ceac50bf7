/// Form of the request-target (RFC 9112 §3.2). Authority-form (CONNECT) is refused.
public enum RequestTargetForm: Sendable, Hashable {
    /// `/path?query`
    case origin
    /// `http://host/path?query` (or https)
    case absolute
    /// `*` (OPTIONS only)
    case asterisk
}

/// A parsed, validated request head.
public struct HTTPRequestHead: HTTPHead {
    public let storage: [UInt8]
    public let fields: [HTTPField]
    public let method: HTTPMethod
    public let methodRange: ByteRange
    /// The whole request-target as received.
    public let target: ByteRange
    public let targetForm: RequestTargetForm
    /// Path part of the target (before `?`); empty for asterisk-form and for an
    /// absolute-form target without a path (which means `/`).
    public let path: ByteRange
    /// Query without its `?`, nil when the target has no `?`.
    public let query: ByteRange?
    /// Authority of an absolute-form target.
    public let authority: ByteRange?
    public let version: HTTPVersion
    /// Value of the (single) Host field; nil only for HTTP/1.0 without Host.
    public let host: ByteRange?
    public let framing: BodyFraming
    public let connection: ConnectionSemantics

    /// Parses a complete request head at the start of `buffer`.
    /// Returns nil when more bytes are needed; throws when the head must be refused
    /// (`error.status` is the answer; close the connection afterwards).
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, limits: HTTPHeadLimits = .default
    ) throws(HTTPHeadError) -> HTTPRequestHead? {
        var arrays = HeadArrays()
        return try parse(buffer, limits: limits, reusing: &arrays)
    }

    /// The same, filling the arrays of an earlier head (`HeadArrays(of:)`) when they are
    /// free; `arrays` is left empty when a head is returned.
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, limits: HTTPHeadLimits = .default, reusing arrays: inout HeadArrays
    ) throws(HTTPHeadError) -> HTTPRequestHead? {
        guard let bounds = try HeadScanner.find(
            in: buffer, maxBytes: limits.maxHeadBytes, skipLeadingEmptyLines: true)
        else { return nil }
        return try RequestHeadParser(buffer, bounds, limits).parse(reusing: &arrays)
    }

    /// Convenience for byte arrays (tests, tools).
    public static func parse(
        _ bytes: [UInt8], limits: HTTPHeadLimits = .default
    ) throws(HTTPHeadError) -> HTTPRequestHead? {
        let result = bytes.withUnsafeBytes { buf in
            Result { () throws(HTTPHeadError) in try parse(buf, limits: limits) }
        }
        return try result.get()
    }

    init(
        storage: [UInt8], fields: [HTTPField], method: HTTPMethod, methodRange: ByteRange,
        target: ByteRange, targetForm: RequestTargetForm, path: ByteRange, query: ByteRange?,
        authority: ByteRange?, version: HTTPVersion, host: ByteRange?, framing: BodyFraming,
        connection: ConnectionSemantics
    ) {
        self.storage = storage
        self.fields = fields
        self.method = method
        self.methodRange = methodRange
        self.target = target
        self.targetForm = targetForm
        self.path = path
        self.query = query
        self.authority = authority
        self.version = version
        self.host = host
        self.framing = framing
        self.connection = connection
    }
}
