import SidecarEvent

/// Appends bytes to a reusable scratch array, then hands them to a byte queue in one copy.
/// For the parts of a head the proxy composes itself (start lines, rewritten fields, local
/// responses); forwarded fields go through SidecarHTTP's `HeadWriter`.
struct ByteBuilder {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(2048) }

    mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    mutating func append(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func append(_ slice: ArraySlice<UInt8>) { bytes.append(contentsOf: slice) }
    mutating func append(_ array: [UInt8]) { bytes.append(contentsOf: array) }
    mutating func append(_ raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }

    mutating func append(decimal value: UInt64) {
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    func write(to queue: ByteQueue) { queue.append(bytes) }
}
