/// Why a field could not be written.
public enum HeadWriteError: Error, Sendable, Hashable {
    case invalidFieldName
    /// The value contains CR, LF, NUL or another control character, or edge whitespace.
    case unsafeFieldValue
}

/// Builds an outgoing head into one byte buffer: start line, forwarded fields, added fields,
/// final CRLF. Reuse one writer (`reset()`) to avoid reallocating.
public struct HeadWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 1024) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Field lines (`name: value\r\n`…) their writer already checked, e.g. a block rendered
    /// once per session and kept.
    public init(checkedFields: [UInt8]) { bytes = checkedFields }

    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    // MARK: start lines

    /// `METHOD SP normalized-path [? query] SP HTTP/1.1 CRLF` for the upstream. The path is
    /// normalized; an absolute-form target is sent in origin form.
    public mutating func appendRequestLine(for head: HTTPRequestHead) throws(PathNormalizationError) {
        let mark = bytes.count
        head.storage.withUnsafeBytes { buf in
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[head.methodRange.range]))
        }
        bytes.append(ASCII.sp)
        if head.targetForm == .asterisk {
            bytes.append(0x2A)
        } else {
            let result = head.storage.withUnsafeBytes { buf in
                Result { () throws(PathNormalizationError) in
                    try PathNormalizer.normalize(UnsafeRawBufferPointer(rebasing: buf[head.path.range]), into: &bytes)
                }
            }
            if case .failure(let error) = result {
                bytes.removeSubrange(mark...)
                throw error
            }
            if let query = head.query {
                bytes.append(0x3F)
                bytes.append(contentsOf: head.storage[query.range])
            }
        }
        append(" HTTP/1.1\r\n")
    }

    /// `METHOD SP target SP HTTP/1.1 CRLF` from parts the caller already validated
    /// (e.g. a request of our own to Apple).
    public mutating func appendRequestLine(method: StaticString, target: String) {
        append(method)
        bytes.append(ASCII.sp)
        bytes.append(contentsOf: target.utf8)
        append(" HTTP/1.1\r\n")
    }

    /// `HTTP/1.1 SP code SP reason CRLF`. `status` is clamped to 100...999.
    public mutating func appendStatusLine(status: Int, reason: StaticString) {
        appendStatusCode(status)
        append(reason)
        append("\r\n")
    }

    /// The status line of an upstream response, sent as HTTP/1.1 with its reason phrase.
    public mutating func appendStatusLine(of head: HTTPResponseHead) {
        appendStatusCode(head.status)
        head.storage.withUnsafeBytes { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[head.reason.range])) }
        append("\r\n")
    }

    private mutating func appendStatusCode(_ status: Int) {
        let code = min(max(status, 100), 999)
        append("HTTP/1.1 ")
        bytes.append(0x30 + UInt8(code / 100))
        bytes.append(0x30 + UInt8(code / 10 % 10))
        bytes.append(0x30 + UInt8(code % 10))
        bytes.append(ASCII.sp)
    }

    // MARK: fields

    /// Copies the fields a proxy forwards (`ForwardedFields`: all but hop-by-hop fields and
    /// the names `forwarding` drops, Content-Length once and canonical, Host always). With
    /// `keepUpgrade` (a validated upgrade), `Upgrade` is kept and `Connection: upgrade` added.
    public mutating func appendFields(
        of head: some HTTPHead, forwarding: FieldForwarding, keepUpgrade: Bool = false
    ) {
        let storage = head.storage, fields = head.fields, connection = head.connection
        let upgrade = storage.withUnsafeBytes { buf in
            fields.withUnsafeBufferPointer { f in
                ForwardedFields.forEach(buf, f, connection: connection, forwarding: forwarding, keepUpgrade: keepUpgrade) {
                    bytes.append(contentsOf: $0)
                }
            }
        }
        if upgrade { append("Connection: upgrade\r\n") }
    }

    /// Appends `name: value` after checking both (values from config, cookies, tokens).
    public mutating func appendField(name: String, value: String) throws(HeadWriteError) {
        var n = name, v = value
        let error: HeadWriteError? = n.withUTF8 { nb in
            v.withUTF8 { vb in
                Result { () throws(HeadWriteError) in
                    try appendField(name: UnsafeRawBufferPointer(nb), value: UnsafeRawBufferPointer(vb))
                }.error
            }
        }
        if let error { throw error }
    }

    public mutating func appendField(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws(HeadWriteError) {
        guard HeaderValue.isValidName(name) else { throw .invalidFieldName }
        guard HeaderValue.isSafe(value) else { throw .unsafeFieldValue }
        bytes.append(contentsOf: name)
        append(": ")
        bytes.append(contentsOf: value)
        append("\r\n")
    }

    /// A field whose name and value are compile-time constants known to be valid.
    public mutating func appendField(_ name: StaticString, _ value: StaticString) {
        append(name)
        append(": ")
        append(value)
        append("\r\n")
    }

    /// Fields another writer already checked, e.g. a block rendered once and kept.
    public mutating func append(_ other: HeadWriter) { bytes.append(contentsOf: other.bytes) }

    /// `Content-Length: n`.
    public mutating func appendContentLength(_ n: UInt64) {
        append("Content-Length: ")
        appendDecimal(n)
        append("\r\n")
    }

    /// The framing field for `framing` (nothing for `.none`/`.untilClose`).
    public mutating func appendFraming(_ framing: BodyFraming) {
        switch framing {
        case .contentLength(let n): appendContentLength(n)
        case .chunked: append("Transfer-Encoding: chunked\r\n")
        case .none, .untilClose: break
        }
    }

    /// The empty line that ends the head.
    public mutating func finish() { append("\r\n") }

    // MARK: raw

    public mutating func append(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    public mutating func appendDecimal(_ value: UInt64) {
        var v = value
        let start = bytes.count
        repeat {
            bytes.append(0x30 + UInt8(v % 10))
            v /= 10
        } while v != 0
        bytes[start...].reverse()
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
