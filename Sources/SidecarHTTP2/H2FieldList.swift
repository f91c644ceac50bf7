import CNGHTTP2
import SidecarHTTP

/// A response's HTTP/2 field list in one byte buffer (names lowercased as they are copied),
/// kept by its connection and refilled per response: no array per field, and no per-byte
/// array appends (the copies are plain memory moves into room made once).
///
/// Response heads are handed to libnghttp2 by reference (`pinHead`): it keeps pointers into
/// the buffer until it serializes the HEADERS frame, which may be turns later, behind other
/// streams' frames or a socket the client does not read. A pinned head's bytes stay where
/// they are: the next head is written after it, and a buffer that must grow meanwhile is
/// kept aside, not freed, until `unpinHeads` (libnghttp2 has serialized every head).
public final class H2FieldList {
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity: Int
    private var used = 0
    /// Where the head now being written starts in `bytes` (earlier bytes are pinned heads').
    private var headStart = 0
    /// Buffers outgrown while heads in them were pinned.
    private var outgrown: [UnsafeMutablePointer<UInt8>] = []
    /// Heads were handed to libnghttp2 by reference since the last `unpinHeads`.
    private var pinned = false
    /// (name start, name length, value start, value length) in `bytes`, of the list now being
    /// written.
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
        for buffer in outgrown { buffer.deallocate() }
    }

    /// Empty, for the next list; the bytes of pinned heads stay as they are.
    public func removeAll() {
        if !pinned { used = 0 }
        headStart = used
        count = 0
    }

    /// libnghttp2 now references the list as it is (`withNameValues(byReference: true)` was
    /// submitted): its bytes must not move or change until `unpinHeads`.
    func pinHead() {
        pinned = true
    }

    /// libnghttp2 holds no reference into the buffers any more: every pinned head is
    /// serialized (or dropped with its stream).
    func unpinHeads() {
        guard pinned else { return }
        pinned = false
        for buffer in outgrown { buffer.deallocate() }
        outgrown.removeAll(keepingCapacity: true)
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

    /// The list as nghttp2 name-value pairs pointing into `bytes`, valid during `body`.
    /// `byReference`: nghttp2 keeps the pointers into `bytes` (the names are lowercase
    /// already), so the list must not change until the frame is serialized
    /// (`H2ResponseHeads`); otherwise nghttp2 copies the fields while the submit call runs.
    func withNameValues<R>(byReference: Bool = false, _ body: (UnsafeBufferPointer<nghttp2_nv>) -> R) -> R {
        let flags = byReference ? Self.noCopy : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, count)) { list in
            for i in 0..<count {
                let span = spans[i]
                list[i] = nghttp2_nv(
                    name: bytes + span.0, value: bytes + span.2, namelen: span.1, valuelen: span.3, flags: flags)
            }
            return body(UnsafeBufferPointer(rebasing: list[0..<count]))
        }
    }

    /// Room for `byteCount` more bytes; returns where they start. A buffer that must grow
    /// moves only the list being written; with pinned heads in it, it is kept until
    /// `unpinHeads`.
    private func reserve(_ byteCount: Int) -> Int {
        if used + byteCount > byteCapacity {
            let keep = used - headStart
            var capacity = byteCapacity * 2
            while capacity < keep + byteCount { capacity *= 2 }
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
            grown.update(from: bytes + headStart, count: keep)
            if pinned { outgrown.append(bytes) } else { bytes.deallocate() }
            for i in 0..<count {
                spans[i].0 -= headStart
                spans[i].2 -= headStart
            }
            bytes = grown
            byteCapacity = capacity
            used = keep
            headStart = 0
        }
        let start = used
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

    private static let noCopy = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)

    nonisolated(unsafe) private static let statusName: UnsafePointer<UInt8> = {
        let name = Array(":status".utf8)
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: name.count)
        pointer.initialize(from: name, count: name.count)
        return UnsafePointer(pointer)
    }()
}
