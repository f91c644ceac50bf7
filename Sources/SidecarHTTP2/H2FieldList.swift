import CNGHTTP2

/// A response's HTTP/2 field list in one byte buffer (names lowercased as they are copied),
/// kept and refilled per response: no array per field.
public struct H2FieldList {
    var bytes: [UInt8] = []
    /// (name start, name length, value start, value length) in `bytes`.
    var spans: [(Int, Int, Int, Int)] = []

    public init() {
        bytes.reserveCapacity(1024)
        spans.reserveCapacity(32)
    }

    public var count: Int { spans.count }

    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
    }

    /// `:status` and its three digits.
    public mutating func appendStatus(_ status: Int) {
        let start = bytes.count
        bytes.append(contentsOf: ":status".utf8)
        bytes.append(UInt8(48 + status / 100 % 10))
        bytes.append(UInt8(48 + status / 10 % 10))
        bytes.append(UInt8(48 + status % 10))
        spans.append((start, 7, start + 7, 3))
    }

    public mutating func append(lowercasing name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let start = bytes.count
        for c in name { bytes.append(c &- 0x41 < 26 ? c | 0x20 : c) }
        bytes.append(contentsOf: value)
        spans.append((start, name.count, start + name.count, value.count))
    }

    /// The list as nghttp2 name-value pairs pointing into `bytes`, valid during `body`
    /// (nghttp2 copies them while a submit call runs).
    func withNameValues<R>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        bytes.withUnsafeBufferPointer { storage in
            withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, spans.count)) { list in
                let base = UnsafeMutablePointer(mutating: storage.baseAddress ?? H2FieldList.placeholder)
                for (i, span) in spans.enumerated() {
                    list[i] = nghttp2_nv(
                        name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                }
                return body(UnsafeBufferPointer(rebasing: list[0..<spans.count]))
            }
        }
    }

    nonisolated(unsafe) static let placeholder: UnsafePointer<UInt8> = {
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return UnsafePointer(pointer)
    }()
}
