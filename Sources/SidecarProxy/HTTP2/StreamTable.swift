/// A connection's open streams' exchanges by stream id: at most `limits.max_streams` (100)
/// and usually one or a few, so a scan of ids in one array is cheaper than hashing an id
/// for each of the several lookups a stream's every frame makes.
struct StreamTable {
    private var ids: [Int32] = []
    private var entries: [H2StreamExchange] = []

    var isEmpty: Bool { ids.isEmpty }
    var all: [H2StreamExchange] { entries }

    subscript(id: Int32) -> H2StreamExchange? {
        guard let index = ids.firstIndex(of: id) else { return nil }
        return entries[index]
    }

    /// The exchange of stream `id`, unretained: for a caller that closes no stream while it
    /// uses it, so that the table's own reference keeps it (nil: no such stream).
    @inline(__always)
    func unretained(_ id: Int32) -> Unmanaged<H2StreamExchange>? {
        guard let index = ids.firstIndex(of: id) else { return nil }
        return Unmanaged.passUnretained(entries[index])
    }

    /// Adds the exchange of a new stream (ids are never reused on a connection).
    mutating func insert(_ exchange: H2StreamExchange) {
        ids.append(exchange.id)
        entries.append(exchange)
    }

    mutating func remove(_ id: Int32) -> H2StreamExchange? {
        guard let index = ids.firstIndex(of: id) else { return nil }
        ids.swapAt(index, ids.count - 1)
        entries.swapAt(index, entries.count - 1)
        ids.removeLast()
        return entries.removeLast()
    }

    mutating func removeAll() {
        ids.removeAll()
        entries.removeAll()
    }
}

extension Array where Element == H2StreamExchange {
    /// Emptied, keeping its capacity, one element at a time: the connection's queues hold one
    /// or a few exchanges, and `removeAll(keepingCapacity:)` goes through the generic
    /// `replaceSubrange`, several times the cost of popping them.
    mutating func empty() {
        while popLast() != nil {}
    }
}
