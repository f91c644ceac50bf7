/// A set of header names compiled once (from configuration) for allocation-free matching.
/// Matching ignores ASCII case and treats `_` as `-`, so `X_Auth_User_Id` matches
/// `X-Auth-User-Id`. A class: the per-request path passes sets around without copying (and
/// retaining) their arrays. Each name may carry a tag (`tag(of:)`), so that one lookup tells
/// apart names a caller treats differently (`FieldForwarding`).
public final class HeaderNameSet: @unchecked Sendable {  // immutable after init
    /// Folded names (lower case, `_` → `-`), all in one block, grouped by length.
    private let folded: UnsafeMutableRawBufferPointer
    /// Per exact name shorter than 64 bytes, grouped by length: its `key` and where its bytes
    /// start in `folded`. A name is compared by its key, one or two words, before its bytes.
    private let keys: UnsafeMutableBufferPointer<(first: UInt64, last: UInt64, start: Int)>
    /// The tag of each name in `keys`, in the same order.
    private let tags: UnsafeMutableBufferPointer<UInt8>
    /// `byLength[n]`: the names of length n (< 64) in `keys`, as (first index, how many).
    private let byLength: UnsafeMutableBufferPointer<(start: Int32, names: Int32)>
    /// Exact names of 64 bytes or more.
    private let longEntries: [(start: Int, count: Int, tag: UInt8)]
    /// Names ending in `*` in the source match every name with that prefix.
    private let prefixEntries: [(start: Int, count: Int, tag: UInt8)]
    /// Bit n set when some exact name has length n (n < 64): most names miss on this alone.
    private let lengthMask: UInt64
    /// Bit c set when some prefix starts with the (folded) byte c < 64 + 64·word: the other
    /// names miss the prefixes on their first byte.
    private let prefixFirstBytes: (UInt64, UInt64)

    /// `names` are header names; a trailing `*` makes a prefix (`Proxy-*`). Each has tag 1.
    public convenience init(_ names: some Sequence<String>) {
        self.init(tagged: names.map { ($0, 1) })
    }

    /// Names with their tags (1...255); where a name is given twice, the first tag counts. An
    /// exact name's tag wins over a prefix's that it also matches.
    public init(tagged names: some Sequence<(String, UInt8)>) {
        var exact: [(bytes: [UInt8], tag: UInt8)] = []
        var prefixes: [(bytes: [UInt8], tag: UInt8)] = []
        for (name, tag) in names {
            precondition(tag != 0, "tag 0 means absent")
            var bytes = Array(name.utf8).map(Self.fold)
            if bytes.last == 0x2A {
                bytes.removeLast()
                if !prefixes.contains(where: { $0.bytes == bytes }) { prefixes.append((bytes, tag)) }
            } else if !exact.contains(where: { $0.bytes == bytes }) {
                exact.append((bytes, tag))
            }
        }
        var all: [UInt8] = []
        var groups = [(start: Int32, names: Int32)](repeating: (0, 0), count: 64)
        var starts: [Int] = []
        var nameTags: [UInt8] = []
        var long: [(Int, Int, UInt8)] = []
        var mask: UInt64 = 0
        for length in 0..<64 {
            let group = exact.filter { $0.bytes.count == length }
            guard !group.isEmpty else { continue }
            groups[length] = (Int32(starts.count), Int32(group.count))
            for name in group {
                starts.append(all.count)
                nameTags.append(name.tag)
                all += name.bytes
            }
            mask |= 1 << UInt64(length)
        }
        for name in exact where name.bytes.count >= 64 {
            long.append((all.count, name.bytes.count, name.tag))
            all += name.bytes
        }
        var prefixEntries: [(Int, Int, UInt8)] = []
        var firstBytes: (UInt64, UInt64) = (0, 0)
        for (prefix, tag) in prefixes {
            prefixEntries.append((all.count, prefix.count, tag))
            all += prefix
            guard let first = prefix.first else {
                firstBytes = (.max, .max)  // `*` alone: every name
                continue
            }
            if first < 64 { firstBytes.0 |= 1 << UInt64(first) } else if first < 128 { firstBytes.1 |= 1 << UInt64(first - 64) }
        }
        folded = .allocate(byteCount: max(all.count, 1), alignment: 8)
        folded.copyBytes(from: all)
        keys = .allocate(capacity: max(starts.count, 1))
        tags = .allocate(capacity: max(nameTags.count, 1))
        _ = tags.initialize(from: nameTags)
        byLength = .allocate(capacity: 64)
        _ = byLength.initialize(from: groups)
        for length in 0..<64 {
            let group = groups[length]
            for index in Int(group.start)..<Int(group.start + group.names) {
                let key = Self.key(UnsafeRawPointer(folded.baseAddress! + starts[index]), length)
                (keys.baseAddress! + index).initialize(to: (key.first, key.last, starts[index]))
            }
        }
        self.prefixFirstBytes = firstBytes
        self.longEntries = long
        self.prefixEntries = prefixEntries
        self.lengthMask = mask
    }

    deinit {
        folded.deallocate()
        keys.deallocate()
        tags.deallocate()
        byLength.deallocate()
    }

    public static let empty = HeaderNameSet([])

    /// Hop-by-hop fields a proxy never forwards (RFC 9110 §7.6.1, plus `Proxy-*`).
    public static let hopByHopNames = [
        "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-*",
        "http2-settings",  // RFC 9113 §3.1: connection-specific, meaningful only with `Upgrade: h2c`
    ]
    public static let hopByHop = HeaderNameSet(hopByHopNames)

    @inline(__always) static func fold(_ c: UInt8) -> UInt8 {
        c == 0x5F ? 0x2D : ASCII.lower(c)
    }

    public var isEmpty: Bool { lengthMask == 0 && longEntries.isEmpty && prefixEntries.isEmpty }

    /// Whether `name` (raw bytes of a field name) is in the set. Most names are decided by
    /// the length mask and the prefixes' first bytes, without a comparison.
    @inline(__always) public func contains(_ name: UnsafeRawBufferPointer) -> Bool {
        tag(of: name) != 0
    }

    /// The tag `name` (raw bytes of a field name) has in the set; 0 if it is not in it.
    @inline(__always) public func tag(of name: UnsafeRawBufferPointer) -> UInt8 {
        let n = name.count
        if n < 64 {
            if lengthMask & (1 << UInt64(n)) != 0 {
                let tag = exactTag(name)
                if tag != 0 { return tag }
            }
        } else if !longEntries.isEmpty {
            let tag = exactTag(name)
            if tag != 0 { return tag }
        }
        guard n > 0 else { return prefixFirstBytes.0 == .max ? prefixTag(name) : 0 }
        let first = Self.fold(name[0])
        let bit = first < 64 ? prefixFirstBytes.0 >> UInt64(first) : first < 128 ? prefixFirstBytes.1 >> UInt64(first - 64) : 0
        return bit & 1 != 0 ? prefixTag(name) : 0
    }

    @inline(never) private func exactTag(_ name: UnsafeRawBufferPointer) -> UInt8 {
        let n = name.count
        guard n > 0, let base = name.baseAddress else { return 0 }
        if n < 64 {
            let group = byLength[n]
            let key = Self.key(base, n)
            var index = Int(group.start)
            let end = index &+ Int(group.names)
            while index < end {
                let candidate = keys[index]
                if candidate.first == key.first, candidate.last == key.last,
                   n <= 16 || Self.equalFolded(name, 0, folded, candidate.start, n)
                {
                    return tags[index]
                }
                index &+= 1
            }
            return 0
        }
        for e in longEntries where e.count == n && Self.equalFolded(name, 0, folded, e.start, n) { return e.tag }
        return 0
    }

    /// A name's bytes 0..<8 and n-8..<n, folded (`ASCIIWords.folded`); shorter names packed
    /// into the first word, the second 0. Up to 16 bytes, names with equal keys are equal.
    @inline(__always) static func key(_ p: UnsafeRawPointer, _ n: Int) -> (first: UInt64, last: UInt64) {
        if n >= 8 {
            return (ASCIIWords.folded(p.loadUnaligned(as: UInt64.self)),
                    ASCIIWords.folded(p.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self)))
        }
        if n >= 4 {
            let low = UInt64(p.loadUnaligned(as: UInt32.self))
            let high = UInt64(p.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self))
            return (ASCIIWords.folded(low | high << 32), 0)
        }
        var word: UInt64 = 0
        for i in 0..<n { word |= UInt64(p.load(fromByteOffset: i, as: UInt8.self)) << UInt64(8 &* i) }
        return (ASCIIWords.folded(word), 0)
    }

    @inline(never) private func prefixTag(_ name: UnsafeRawBufferPointer) -> UInt8 {
        for e in prefixEntries where e.count <= name.count && Self.equalFolded(name, 0, folded, e.start, e.count) {
            return e.tag
        }
        return 0
    }

    public func contains(_ name: String) -> Bool {
        tag(of: name) != 0
    }

    public func tag(of name: String) -> UInt8 {
        var s = name
        return s.withUTF8 { tag(of: UnsafeRawBufferPointer($0)) }
    }

    func contains(_ buf: UnsafeRawBufferPointer, _ range: ByteRange) -> Bool {
        contains(UnsafeRawBufferPointer(rebasing: buf[range.range]))
    }

    /// `a[aStart..<aStart+count]` folded equals `folded[fStart..<fStart+count]`, a word at a time.
    @inline(__always) static func equalFolded(
        _ a: UnsafeRawBufferPointer, _ aStart: Int, _ folded: UnsafeMutableRawBufferPointer,
        _ fStart: Int, _ count: Int
    ) -> Bool {
        precondition(aStart + count <= a.count && fStart + count <= folded.count)
        guard count > 0 else { return true }
        return ASCIIWords.equal(
            a.baseAddress! + aStart, folding: count, to: UnsafeRawPointer(folded.baseAddress! + fStart), underscore: true)
    }
}
