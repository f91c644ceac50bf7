/// A set of header names compiled once (from configuration) for allocation-free matching.
/// Matching ignores ASCII case and treats `_` as `-`, so `X_Auth_User_Id` matches
/// `X-Auth-User-Id`.
public struct HeaderNameSet: Sendable {
    /// Folded names (lower case, `_` → `-`), all in one buffer.
    private let folded: [UInt8]
    private let entries: [(start: Int, count: Int)]
    /// Names ending in `*` in the source match every name with that prefix.
    private let prefixEntries: [(start: Int, count: Int)]
    /// Bit n set when some exact name has length n (n < 64); longer names always checked.
    private let lengthMask: UInt64

    /// `names` are header names; a trailing `*` makes a prefix (`Proxy-*`).
    public init(_ names: some Sequence<String>) {
        var folded: [UInt8] = []
        var entries: [(Int, Int)] = []
        var prefixes: [(Int, Int)] = []
        var mask: UInt64 = 0
        for name in names {
            var bytes = Array(name.utf8)
            let isPrefix = bytes.last == 0x2A
            if isPrefix { bytes.removeLast() }
            let start = folded.count
            folded.append(contentsOf: bytes.map(Self.fold))
            if isPrefix {
                prefixes.append((start, bytes.count))
            } else {
                entries.append((start, bytes.count))
                mask |= bytes.count < 64 ? 1 << UInt64(bytes.count) : 0
            }
        }
        self.folded = folded
        self.entries = entries
        self.prefixEntries = prefixes
        self.lengthMask = mask
    }

    public static let empty = HeaderNameSet([])

    /// Hop-by-hop fields a proxy never forwards (RFC 9110 §7.6.1, plus `Proxy-*`).
    public static let hopByHop = HeaderNameSet([
        "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-*",
    ])

    @inline(__always) static func fold(_ c: UInt8) -> UInt8 {
        c == 0x5F ? 0x2D : ASCII.lower(c)
    }

    public var isEmpty: Bool { entries.isEmpty && prefixEntries.isEmpty }

    /// Whether `name` (raw bytes of a field name) is in the set.
    public func contains(_ name: UnsafeRawBufferPointer) -> Bool {
        let n = name.count
        return folded.withUnsafeBufferPointer { f in
            if n >= 64 || lengthMask & (1 << UInt64(n)) != 0 {
                for e in entries where e.count == n && Self.equalFolded(name, 0, f, e.start, n) {
                    return true
                }
            }
            for e in prefixEntries where e.count <= n && Self.equalFolded(name, 0, f, e.start, e.count) {
                return true
            }
            return false
        }
    }

    public func contains(_ name: String) -> Bool {
        var s = name
        return s.withUTF8 { contains(UnsafeRawBufferPointer($0)) }
    }

    func contains(_ buf: UnsafeRawBufferPointer, _ range: ByteRange) -> Bool {
        contains(UnsafeRawBufferPointer(rebasing: buf[range.range]))
    }

    @inline(__always) static func equalFolded(
        _ a: UnsafeRawBufferPointer, _ aStart: Int, _ folded: UnsafeBufferPointer<UInt8>,
        _ fStart: Int, _ count: Int
    ) -> Bool {
        var i = 0
        while i < count {
            if fold(a[aStart + i]) != folded[fStart + i] { return false }
            i += 1
        }
        return true
    }
}
