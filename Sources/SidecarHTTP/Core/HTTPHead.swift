/// A parsed head: its bytes are kept once in `storage`; every name, value and line part is a
/// `ByteRange` into it.
public protocol HTTPHead: Sendable {
    /// The head's bytes, from the first byte consumed through the final CRLF CRLF.
    var storage: [UInt8] { get }
    /// Header field lines in order of arrival.
    var fields: [HTTPField] { get }
    /// What the `Connection` and `Upgrade` fields say.
    var connection: ConnectionSemantics { get }
}

extension HTTPHead {
    /// Number of input bytes the head occupied; the body (if any) starts here.
    @inlinable public var headLength: Int { storage.count }

    /// The bytes of a range as a String (for logging/tests; not for the hot path).
    public func string(_ range: ByteRange) -> String {
        String(decoding: storage[range.range], as: UTF8.self)
    }

    /// Bytes of a range.
    @inlinable public func bytes(_ range: ByteRange) -> ArraySlice<UInt8> {
        storage[range.range]
    }

    /// Whether the field's name equals `name` ASCII case-insensitively (`name` lower-case).
    @inlinable public func fieldName(_ field: HTTPField, is name: StaticString) -> Bool {
        storage.withUnsafeBytes { ByteCompare.equalsLowercased($0, field.name, name) }
    }

    /// Value range of the first field named `name` (give it lower-case).
    public func firstValue(_ name: StaticString) -> ByteRange? {
        storage.withUnsafeBytes { buf in
            for f in fields where ByteCompare.equalsLowercased(buf, f.name, name) { return f.value }
            return nil
        }
    }

    /// Value of the first field named `name` as a String (convenience, allocates).
    public func firstValueString(_ name: StaticString) -> String? {
        firstValue(name).map(string)
    }

    /// Value ranges of every field named `name` (lower-case).
    public func values(_ name: StaticString) -> [ByteRange] {
        storage.withUnsafeBytes { buf in
            fields.lazy.filter { ByteCompare.equalsLowercased(buf, $0.name, name) }.map(\.value)
        }
    }
}

/// Case-insensitive comparisons of head bytes with lower-case constants.
public enum ByteCompare {
    /// `buf[range]` equals the lower-case ASCII constant, ignoring ASCII case.
    @inlinable public static func equalsLowercased(
        _ buf: UnsafeRawBufferPointer, _ range: ByteRange, _ lower: StaticString
    ) -> Bool {
        let n = lower.utf8CodeUnitCount
        guard range.count == n, Int(range.end) <= buf.count else { return false }
        if n == 0 { return true }
        return ASCIIWords.equal(
            buf.baseAddress! + Int(range.start), folding: n, to: UnsafeRawPointer(lower.utf8Start), underscore: false)
    }

    /// Byte slice `buf[start..<end]` equals the lower-case constant, ignoring ASCII case.
    @inlinable static func equalsLowercased(
        _ buf: UnsafeRawBufferPointer, _ start: Int, _ end: Int, _ lower: StaticString
    ) -> Bool {
        equalsLowercased(buf, ByteRange(start: start, end: end), lower)
    }
}
