/// The two arrays a parsed head owns — its bytes and its field index — handed back after
/// the head is done with, so the next parse on a busy loop fills them again instead of
/// allocating two fresh arrays per message. Copy-on-write keeps this safe: a head still
/// referenced elsewhere keeps its arrays, and the parser then simply allocates.
public struct HeadArrays: Sendable {
    var storage: [UInt8] = []
    var fields: [HTTPField] = []

    public init() {}

    /// The arrays of a head that is no longer needed (they are reused only if unique).
    public init(of head: some HTTPHead) {
        storage = head.storage
        fields = head.fields
    }

    /// Bytes of storage kept for reuse.
    public var capacity: Int { storage.capacity }

    /// The storage emptied and refilled with `bytes`; the field index emptied with room for
    /// at least `fieldCapacity`.
    mutating func take(_ bytes: UnsafeRawBufferPointer, fieldCapacity: Int) -> (storage: [UInt8], fields: [HTTPField]) {
        var storage: [UInt8] = []
        var fields: [HTTPField] = []
        swap(&storage, &self.storage)
        swap(&fields, &self.fields)
        storage.removeAll(keepingCapacity: true)
        storage.append(contentsOf: bytes)
        fields.removeAll(keepingCapacity: true)
        fields.reserveCapacity(fieldCapacity)
        return (storage, fields)
    }
}
