import Glibc

/// Writes a head straight into memory reserved for it — a byte queue's free space on the
/// proxy path — so a forwarded head is copied once, with no intermediate array. The caller
/// reserves an upper bound of what it writes; every append checks it (a wrong bound traps
/// rather than writing past the reservation).
public struct HeadBuffer {
    private let base: UnsafeMutableRawPointer
    public let capacity: Int
    public private(set) var count = 0

    public init(_ base: UnsafeMutableRawPointer, capacity: Int) {
        self.base = base
        self.capacity = capacity
    }

    /// The bytes written so far.
    public var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always) public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        precondition(n <= capacity - count, "head larger than its reservation")
        if n > 0 { SmallCopy.copy(base + count, bytes.baseAddress!, n) }
        count += n
    }

    @inline(__always) public mutating func append(_ s: StaticString) {
        append(UnsafeRawBufferPointer(staticString: s))
    }

    @inline(__always) public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// `n` bytes written in place by `body`, which must write exactly that many.
    @inline(__always) public mutating func append(count n: Int, _ body: (UnsafeMutableRawPointer) -> Void) {
        precondition(n <= capacity - count, "head larger than its reservation")
        body(base + count)
        count += n
    }

    @inline(__always) public mutating func append(_ byte: UInt8) {
        precondition(count < capacity, "head larger than its reservation")
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// `HTTP/1.1 SP code SP reason CRLF` of an upstream response (at most its status line + 1).
    public mutating func appendStatusLine(of head: HTTPResponseHead, _ view: HeadView) {
        let code = min(max(head.status, 100), 999)
        append("HTTP/1.1 ")
        append(0x30 + UInt8(code / 100))
        append(0x30 + UInt8(code / 10 % 10))
        append(0x30 + UInt8(code % 10))
        append(ASCII.sp)
        append(view[head.reason])
        append("\r\n")
    }

    /// The fields a proxy forwards (`ForwardedFields`) of the head `view` shows, whose
    /// `Connection` says `connection`; at most the head's size + 21 bytes.
    public mutating func appendFields(
        of view: HeadView, connection: ConnectionSemantics, forwarding: FieldForwarding, keepUpgrade: Bool = false
    ) {
        let upgrade = ForwardedFields.forEach(
            view.bytes, view.fields, connection: connection, forwarding: forwarding, keepUpgrade: keepUpgrade
        ) {
            append($0)
        }
        if upgrade { append("Connection: upgrade\r\n") }
    }

    /// `Transfer-Encoding: chunked` for `.chunked`, `Content-Length` for a length.
    public mutating func appendFraming(_ framing: BodyFraming) {
        switch framing {
        case .chunked: append("Transfer-Encoding: chunked\r\n")
        case .contentLength(let n):
            append("Content-Length: ")
            var digits: (UInt64, Int) = (1, 1)
            while n / digits.0 >= 10 { digits = (digits.0 * 10, digits.1 + 1) }
            var d = digits.0
            while d > 0 {
                append(0x30 + UInt8(n / d % 10))
                d /= 10
            }
            append("\r\n")
        case .none, .untilClose: break
        }
    }

    /// `name: value` after checking both (values from configuration, cookies, tokens).
    public mutating func appendField(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    ) throws(HeadWriteError) {
        guard HeaderValue.isValidName(name) else { throw .invalidFieldName }
        guard HeaderValue.isSafe(value) else { throw .unsafeFieldValue }
        append(name)
        append(": ")
        append(value)
        append("\r\n")
    }
}
