/// A borrowed view of a parsed head — its bytes and its field index as raw buffers — valid
/// only inside `withView`. The per-request path reads heads through it: a copied head is two
/// atomic retains and releases, every `head.storage` access another; a view is neither.
public struct HeadView {
    public let bytes: UnsafeRawBufferPointer
    public let fields: UnsafeBufferPointer<HTTPField>

    @inlinable public init(bytes: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<HTTPField>) {
        self.bytes = bytes
        self.fields = fields
    }

    /// The bytes of a range of the head.
    @inlinable public subscript(range: ByteRange) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[range.range])
    }

    /// Whether the field's name equals `name` ASCII case-insensitively (`name` lower-case).
    @inlinable public func name(of field: HTTPField, is name: StaticString) -> Bool {
        ByteCompare.equalsLowercased(bytes, field.name, name)
    }

    /// Value range of the first field named `name` (lower-case).
    @inlinable public func firstValue(_ name: StaticString) -> ByteRange? {
        for field in fields where ByteCompare.equalsLowercased(bytes, field.name, name) { return field.value }
        return nil
    }
}

extension HTTPHead {
    /// Calls `body` with a view of this head's bytes and fields (valid only inside `body`).
    @inlinable public func withView<R>(_ body: (HeadView) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { bytes in
            try fields.withUnsafeBufferPointer { fields in try body(HeadView(bytes: bytes, fields: fields)) }
        }
    }
}
