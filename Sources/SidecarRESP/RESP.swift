/// Redis's wire format, RESP2: what the store sends (commands as arrays of bulk strings) and
/// what it reads back. Pure, no I/O; the parser is fuzzed (`http-fuzz resp`) like the HTTP ones.
public enum RESPValue: Equatable, Sendable {
    case simple(String)
    case error(String)
    case integer(Int64)
    /// nil: the null bulk string (`$-1`), e.g. `SET … NX` that did not set.
    case bulk([UInt8]?)
    /// nil: the null array (`*-1`).
    case array([RESPValue]?)

    public var isError: Bool {
        if case .error = self { return true }
        return false
    }

    /// The bytes of a bulk or simple string.
    public var bytes: [UInt8]? {
        switch self {
        case .bulk(let value): return value
        case .simple(let text): return Array(text.utf8)
        default: return nil
        }
    }
}

public enum RESP {
    /// A command as RESP2 sends it: `*N` then each argument as a bulk string.
    public static func command(_ arguments: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.count + 16 })
        out.append(UInt8(ascii: "*"))
        out.append(contentsOf: String(arguments.count).utf8)
        out.append(contentsOf: [0x0D, 0x0A])
        for argument in arguments {
            out.append(UInt8(ascii: "$"))
            out.append(contentsOf: String(argument.count).utf8)
            out.append(contentsOf: [0x0D, 0x0A])
            out.append(contentsOf: argument)
            out.append(contentsOf: [0x0D, 0x0A])
        }
        return out
    }

    public static func command(_ arguments: String...) -> [UInt8] { command(arguments.map { Array($0.utf8) }) }
}

/// Reads one reply from the front of a buffer. Bounded: a reply larger than
/// `maximumBulkBytes`, an array longer than `maximumElements` or nested deeper than
/// `maximumDepth` is refused as invalid (the connection is then dropped), so a hostile or
/// broken server cannot make the sidecar allocate without limit.
public struct RESPParser: Sendable {
    public enum Outcome: Equatable {
        /// The buffer holds no complete reply yet.
        case incomplete
        /// A reply and how many bytes it took.
        case value(RESPValue, consumed: Int)
        case invalid(String)
    }

    public var maximumBulkBytes = 64 << 20
    public var maximumElements = 1 << 20
    public var maximumDepth = 8

    public init() {}

    public func parse(_ buffer: UnsafeRawBufferPointer) -> Outcome {
        var index = 0
        switch value(buffer, &index, depth: 0) {
        case .success(let value?): return .value(value, consumed: index)
        case .success(nil): return .incomplete
        case .failure(let reason): return .invalid(reason.text)
        }
    }

    public func parse(_ bytes: [UInt8]) -> Outcome { bytes.withUnsafeBytes { parse($0) } }

    struct Reason: Error { let text: String }

    /// nil: incomplete.
    private func value(_ b: UnsafeRawBufferPointer, _ i: inout Int, depth: Int) -> Result<RESPValue?, Reason> {
        guard i < b.count else { return .success(nil) }
        let kind = b[i]
        i += 1
        let found = self.line(b, &i)
        guard let line = found.line else {
            return found.overlong ? .failure(Reason(text: "reply line longer than \(Self.maximumLineBytes) bytes")) : .success(nil)
        }
        switch kind {
        case UInt8(ascii: "+"): return .success(.simple(String(decoding: line, as: UTF8.self)))
        case UInt8(ascii: "-"): return .success(.error(String(decoding: line, as: UTF8.self)))
        case UInt8(ascii: ":"):
            guard let number = Self.integer(line) else { return .failure(Reason(text: "integer reply is not a number")) }
            return .success(.integer(number))
        case UInt8(ascii: "$"):
            guard let length = Self.integer(line), length >= -1 else { return .failure(Reason(text: "bad bulk length")) }
            if length == -1 { return .success(.bulk(nil)) }
            guard length <= maximumBulkBytes else { return .failure(Reason(text: "bulk reply of \(length) bytes is over the limit")) }
            let count = Int(length)
            guard b.count - i >= count + 2 else { return .success(nil) }
            guard b[i + count] == 0x0D, b[i + count + 1] == 0x0A else {
                return .failure(Reason(text: "bulk reply not terminated by CRLF"))
            }
            let bytes = Array(b[i..<(i + count)])
            i += count + 2
            return .success(.bulk(bytes))
        case UInt8(ascii: "*"):
            guard let length = Self.integer(line), length >= -1 else { return .failure(Reason(text: "bad array length")) }
            if length == -1 { return .success(.array(nil)) }
            guard length <= maximumElements else { return .failure(Reason(text: "array of \(length) elements is over the limit")) }
            guard depth < maximumDepth else { return .failure(Reason(text: "arrays nested too deep")) }
            var elements: [RESPValue] = []
            elements.reserveCapacity(min(Int(length), 1024))
            for _ in 0..<Int(length) {
                switch value(b, &i, depth: depth + 1) {
                case .success(let element?): elements.append(element)
                case .success(nil): return .success(nil)
                case .failure(let reason): return .failure(reason)
                }
            }
            return .success(.array(elements))
        default:
            return .failure(Reason(text: "unknown reply type byte \(kind)"))
        }
    }

    static let maximumLineBytes = 64 * 1024

    /// The bytes up to CRLF; nil if no CRLF yet. Lines are short (a length, a status, an
    /// error message), so one longer than `maximumLineBytes` is refused rather than rescanned
    /// on every read.
    private func line(
        _ b: UnsafeRawBufferPointer, _ i: inout Int
    ) -> (line: UnsafeRawBufferPointer.SubSequence?, overlong: Bool) {
        var j = i
        while j + 1 < b.count {
            if b[j] == 0x0D && b[j + 1] == 0x0A {
                let line = b[i..<j]
                i = j + 2
                return (line, false)
            }
            j += 1
            if j - i > Self.maximumLineBytes { return (nil, true) }
        }
        return (nil, false)
    }

    /// A decimal Int64 with an optional minus sign; nil for anything else (including overflow).
    static func integer(_ text: UnsafeRawBufferPointer.SubSequence) -> Int64? {
        guard !text.isEmpty, text.count <= 20 else { return nil }
        var negative = false
        var digits = text[...]
        if digits.first == UInt8(ascii: "-") {
            negative = true
            digits = digits.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = shifted.addingReportingOverflow(Int64(byte - 0x30))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return negative ? -value : value
    }
}
