import CNGHTTP2
import SidecarHTTP

/// A response's HTTP/2 field list in one byte buffer (names lowercased as they are copied),
/// kept by its connection and refilled per response: no array per field, and no per-byte
/// array appends (the copies are plain memory moves into room made once).
public final class H2FieldList {
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity: Int
    private var used = 0
    /// (name start, name length, value start, value length) in `bytes`.
    private var spans: UnsafeMutablePointer<(Int, Int, Int, Int)>
    private var spanCapacity: Int
    public private(set) var count = 0

    public init() {
        byteCapacity = 1024
        bytes = .allocate(capacity: byteCapacity)
        spanCapacity = 32
        spans = .allocate(capacity: spanCapacity)
    }

    deinit {
        bytes.deallocate()
        spans.deallocate()
    }

    public func removeAll() {
        used = 0
        count = 0
    }

    /// `:status` and its three digits.
    public func appendStatus(_ status: Int) {
        let start = reserve(10)
        let status = min(max(status, 0), 999)
        (bytes + start).update(from: Self.statusName, count: 7)
        bytes[start + 7] = UInt8(48 + status / 100)
        bytes[start + 8] = UInt8(48 + status / 10 % 10)
        bytes[start + 9] = UInt8(48 + status % 10)
        addSpan((start, 7, start + 7, 3))
    }

    public func append(lowercasing name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let start = reserve(name.count + value.count)
        ASCIILowercase.copy(name, to: UnsafeMutableRawPointer(bytes + start))
        let at = start + name.count
        if let base = value.baseAddress, value.count > 0 {
            UnsafeMutableRawPointer(bytes + at).copyMemory(from: base, byteCount: value.count)
        }
        addSpan((start, name.count, at, value.count))
    }

    /// The name and value of field `index`, as stored (tests).
    public func field(_ index: Int) -> (name: [UInt8], value: [UInt8]) {
        let span = spans[index]
        return (Array(UnsafeBufferPointer(start: bytes + span.0, count: span.1)),
                Array(UnsafeBufferPointer(start: bytes + span.2, count: span.3)))
    }

    /// The list as nghttp2 name-value pairs pointing into `bytes`, valid during `body`
    /// (nghttp2 copies them while a submit call runs).
    func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, count)) { list in
            for i in 0..<count {
                let span = spans[i]
                list[i] = nghttp2_nv(
                    name: bytes + span.0, value: bytes + span.2, namelen: span.1, valuelen: span.3,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return body(UnsafeBufferPointer(rebasing: list[0..<count]))
        }
    }

    /// Room for `byteCount` more bytes; returns where they start.
    private func reserve(_ byteCount: Int) -> Int {
        let start = used
        if start + byteCount > byteCapacity {
            var capacity = byteCapacity * 2
            while capacity < start + byteCount { capacity *= 2 }
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            grown.update(from: bytes, count: used)
            bytes.deallocate()
            bytes = grown
            byteCapacity = capacity
        }
        used = start + byteCount
        return start
    }

    private func addSpan(_ span: (Int, Int, Int, Int)) {
        if count == spanCapacity {
            let grown = UnsafeMutablePointer<(Int, Int, Int, Int)>.allocate(capacity: spanCapacity * 2)
            grown.update(from: spans, count: count)
            spans.deallocate()
            spans = grown
            spanCapacity *= 2
        }
        spans[count] = span
        count += 1
    }

    nonisolated(unsafe) private static let statusName: UnsafePointer<UInt8> = {
        let name = Array(":status".utf8)
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: name.count)
        pointer.initialize(from: name, count: name.count)
        return UnsafePointer(pointer)
    }()
}
