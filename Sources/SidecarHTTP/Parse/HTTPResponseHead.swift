/// A parsed, validated upstream response head.
public struct HTTPResponseHead: HTTPHead {
    public let storage: [UInt8]
    public let fields: [HTTPField]
    public let version: HTTPVersion
    /// 100...999 as sent (three digits).
    public let status: Int
    public let reason: ByteRange
    /// Framing per RFC 9112 §6.3, given the request method this answers.
    public let framing: BodyFraming
    /// `keepAlive` is false whenever the body runs until close.
    public let connection: ConnectionSemantics

    /// 1xx other than 101: another head follows on the same connection.
    public var isInterim: Bool { status >= 100 && status < 200 && status != 101 }
    /// 101: after this head the connection carries another protocol.
    public var isSwitchingProtocols: Bool { status == 101 }

    /// Parses a complete response head at the start of `buffer`; nil when more bytes are
    /// needed. `requestMethod` decides whether a body can follow (none for HEAD).
    /// Any error means a broken upstream (a proxy answers 502).
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, requestMethod: HTTPMethod,
        limits: HTTPHeadLimits = .default
    ) throws(HTTPHeadError) -> HTTPResponseHead? {
        var arrays = HeadArrays()
        return try parse(buffer, requestMethod: requestMethod, limits: limits, reusing: &arrays)
    }

    /// The same, filling the arrays of an earlier head (`HeadArrays(of:)`) when they are free.
    public static func parse(
        _ buffer: UnsafeRawBufferPointer, requestMethod: HTTPMethod,
        limits: HTTPHeadLimits = .default, reusing arrays: inout HeadArrays
    ) throws(HTTPHeadError) -> HTTPResponseHead? {
        guard let bounds = try HeadScanner.find(
            in: buffer, maxBytes: limits.maxHeadBytes, skipLeadingEmptyLines: false)
        else { return nil }
        return try parse(buffer, bounds, requestMethod, limits, &arrays)
    }

    /// Convenience for byte arrays (tests, tools).
    public static func parse(
        _ bytes: [UInt8], requestMethod: HTTPMethod, limits: HTTPHeadLimits = .default
    ) throws(HTTPHeadError) -> HTTPResponseHead? {
        let result = bytes.withUnsafeBytes { buf in
            Result { () throws(HTTPHeadError) in
                try parse(buf, requestMethod: requestMethod, limits: limits)
            }
        }
        return try result.get()
    }

    private static func parse(
        _ buf: UnsafeRawBufferPointer, _ bounds: HeadScanner.Bounds, _ method: HTTPMethod,
        _ limits: HTTPHeadLimits, _ arrays: inout HeadArrays
    ) throws(HTTPHeadError) -> HTTPResponseHead {
        var p = bounds.start
        let version = try StartLine.version(buf, at: p, malformed: .malformedStatusLine)
        p += 8
        guard buf[p] == ASCII.sp else { throw .malformedStatusLine }
        p += 1
        var status = 0
        for _ in 0..<3 {
            let c = buf[p]
            guard ASCII.isDigit(c) else { throw .malformedStatusLine }
            status = status * 10 + Int(c &- 0x30)
            p += 1
        }
        guard status >= 100 else { throw .malformedStatusLine }
        // Some servers omit the SP before an empty reason; accept CRLF right after the code.
        if buf[p] == ASCII.sp { p += 1 } else if buf[p] != ASCII.cr { throw .malformedStatusLine }
        let reasonStart = p
        while buf[p] != ASCII.cr {
            guard ASCII.isFieldValueChar(buf[p]) else { throw .controlCharacter }
            p += 1
        }
        let reason = ByteRange(start: reasonStart, end: p)
        guard buf[p + 1] == ASCII.lf else { throw .bareCR }
        p += 2

        var (storage, fields) = arrays.take(UnsafeRawBufferPointer(rebasing: buf[0..<bounds.end]), fieldCapacity: 16)
        var semantics = FieldSemantics()
        try FieldLines.parse(
            buf, from: p, end: bounds.end, maxFields: limits.maxFields,
            into: &fields, semantics: &semantics)
        // Smuggling defenses apply even where the body is ignored.
        let explicit = try semantics.explicitFraming(version: version)
        let framing: BodyFraming
        if method == .head || status < 200 || status == 204 || status == 304 {
            framing = .none
        } else {
            framing = explicit ?? .untilClose
        }
        let connection = ConnectionSemantics(
            keepAlive: framing != .untilClose && semantics.keepAlive(version: version),
            upgrade: status == 101 && semantics.connectionUpgrade && semantics.hasUpgradeField,
            expectContinue: false, listsFieldNames: semantics.connectionListsOthers)
        return HTTPResponseHead(
            storage: storage, fields: fields, version: version, status: status, reason: reason,
            framing: framing, connection: connection)
    }

    init(
        storage: [UInt8], fields: [HTTPField], version: HTTPVersion, status: Int,
        reason: ByteRange, framing: BodyFraming, connection: ConnectionSemantics
    ) {
        self.storage = storage
        self.fields = fields
        self.version = version
        self.status = status
        self.reason = reason
        self.framing = framing
        self.connection = connection
    }
}
