/// A path pattern compiled once: `*` matches any run of characters other than `/` (also
/// none), `**` any run including `/`, and a pattern ending in `/**` also matches the path
/// without that suffix (`/x/**` matches `/x`). Everything else matches itself, case-sensitively.
/// Patterns are matched against normalized paths (`PathNormalizer`).
public struct PathGlob: Sendable, Hashable {
    public let pattern: String
    /// 0...255: a byte; `star`/`globstar`: wildcards.
    private let tokens: [Int16]
    private let endsWithSlashGlobstar: Bool

    private static let star: Int16 = -1
    private static let globstar: Int16 = -2

    public init(_ pattern: String) {
        self.pattern = pattern
        var tokens: [Int16] = []
        let bytes = Array(pattern.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x2A {
                if i + 1 < bytes.count, bytes[i + 1] == 0x2A {
                    tokens.append(Self.globstar)
                    i += 2
                    while i < bytes.count, bytes[i] == 0x2A { i += 1 }  // "***" is "**"
                } else {
                    tokens.append(Self.star)
                    i += 1
                }
            } else {
                tokens.append(Int16(bytes[i]))
                i += 1
            }
        }
        let n = tokens.count
        self.endsWithSlashGlobstar = n >= 2 && tokens[n - 1] == Self.globstar && tokens[n - 2] == 0x2F
        self.tokens = tokens
    }

    /// Whether `path` matches. Runs a set-of-states automaton: O(path × pattern), no
    /// backtracking blow-up, no heap allocation.
    public func matches(_ path: UnsafeRawBufferPointer) -> Bool {
        tokens.withUnsafeBufferPointer { Self.matches(path, tokens: $0, endsWithSlashGlobstar: endsWithSlashGlobstar) }
    }

    /// The compiled form, for a table that keeps many patterns' tokens in one buffer.
    var compiled: (tokens: [Int16], endsWithSlashGlobstar: Bool) { (tokens, endsWithSlashGlobstar) }

    // Inlined into each caller, as it was when it lived in `matches(_:)`: called through a
    // closure it cost ~100 instructions more per request (callgrind).
    @inline(__always)
    static func matches(
        _ path: UnsafeRawBufferPointer, tokens tok: UnsafeBufferPointer<Int16>, endsWithSlashGlobstar: Bool
    ) -> Bool {
        let m = tok.count
        let words = (m + 1 + 63) / 64
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 2 * words) { scratch in
            let cur = UnsafeMutableBufferPointer(rebasing: scratch[0..<words])
            let next = UnsafeMutableBufferPointer(rebasing: scratch[words..<(2 * words)])
            cur.update(repeating: 0)
            Self.insert(0, into: cur, tokens: tok)
            for c in path {
                next.update(repeating: 0)
                var any = false
                for state in 0..<m where Self.has(state, cur) {
                    let t = tok[state]
                    if t >= 0 {
                        if UInt8(t) == c { Self.insert(state + 1, into: next, tokens: tok); any = true }
                    } else if t == Self.globstar || c != 0x2F {
                        Self.insert(state, into: next, tokens: tok)
                        any = true
                    }
                }
                if !any { return false }
                for w in 0..<words { cur[w] = next[w] }
            }
            return Self.has(m, cur) || (endsWithSlashGlobstar && Self.has(m - 2, cur))
        }
    }

    public func matches(_ path: String) -> Bool {
        var s = path
        return s.withUTF8 { matches(UnsafeRawBufferPointer($0)) }
    }

    /// Whether every path `other` matches, this pattern matches too — answered only where
    /// that is certain (the same pattern; `/**`; `/x/**` over a pattern within `/x`), so a
    /// `true` is never wrong and some covered patterns answer `false`.
    public func covers(_ other: PathGlob) -> Bool {
        if tokens == other.tokens { return true }
        guard endsWithSlashGlobstar else { return false }
        let prefix = tokens.dropLast(2)
        guard !prefix.contains(where: { $0 < 0 }) else { return false }
        if prefix.isEmpty { return true }  // `/**`
        let theirs = other.tokens
        // Within `prefix`: equal to it, or it followed by `/` and anything.
        guard theirs.count >= prefix.count, theirs.starts(with: prefix) else { return false }
        return theirs.count == prefix.count || theirs[prefix.count] == 0x2F
    }

    @inline(__always) private static func has(_ state: Int, _ set: UnsafeMutableBufferPointer<UInt64>) -> Bool {
        set[state >> 6] & (1 << UInt64(state & 63)) != 0
    }

    /// Adds `state` and, through wildcards that may match nothing, the states after it.
    @inline(__always) private static func insert(
        _ state: Int, into set: UnsafeMutableBufferPointer<UInt64>, tokens: UnsafeBufferPointer<Int16>
    ) {
        var s = state
        while true {
            set[s >> 6] |= 1 << UInt64(s & 63)
            guard s < tokens.count, tokens[s] < 0 else { return }
            s += 1
        }
    }
}

/// Several globs; matches when any matches.
public struct PathGlobSet: Sendable, Hashable {
    public let globs: [PathGlob]

    public init(_ patterns: [String]) {
        globs = patterns.map(PathGlob.init)
    }

    public var isEmpty: Bool { globs.isEmpty }

    public func matches(_ path: UnsafeRawBufferPointer) -> Bool {
        for g in globs where g.matches(path) { return true }
        return false
    }

    public func matches(_ path: String) -> Bool {
        var s = path
        return s.withUTF8 { matches(UnsafeRawBufferPointer($0)) }
    }
}
