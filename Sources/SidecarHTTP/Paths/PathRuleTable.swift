#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An ordered list of rule conditions compiled once into a trie of literal path segments:
/// a request walks its path's segments down the trie and only the rules hanging on the nodes
/// it passes are looked at (a rule hangs on the node of the literal segments its glob starts
/// with, so every path it can match passes that node). First match wins, as in a scan of the
/// list from the top; `firstMatchByScan` is that scan, kept as the reference.
///
/// Everything the walk reads is plain data in buffers this object owns, written once in
/// `init`: a request touches no reference count (an array or a `PathGlob` read per rule would
/// retain and release its storage each time).
public final class PathRuleTable: @unchecked Sendable {
    private enum Kind: UInt8 {
        /// The glob is all literal: the path must end at this node.
        case exact
        /// `…/**` after literal segments: every path reaching this node.
        case subtree
        /// Anything else: the whole glob is matched against the path.
        case glob
    }

    private struct Node {
        var edgeStart: Int32 = 0
        var edgeCount: Int32 = 0
        var entryStart: Int32 = 0
        var entryCount: Int32 = 0
    }

    private struct Edge {
        var segmentStart: Int32
        var segmentCount: Int32
        var child: Int32
    }

    private struct Entry {
        var rule: Int32
        var kind: Kind
    }

    /// What a rule needs besides its place in the trie.
    private struct RuleData {
        var methods: HTTPMethodSet
        /// In `bytes`; `hostCount` -1: any host.
        var hostStart: Int32
        var hostCount: Int32
        /// In `tokens`, for a `.glob` entry.
        var tokenStart: Int32
        var tokenCount: Int32
        var endsWithSlashGlobstar: Bool
        /// In `bytes`: the literal end of a glob (`.css` of `/*.css`), which a path must end
        /// with to match — a cheap refusal before the automaton runs. Empty after a wildcard.
        var suffixStart: Int32
        var suffixCount: Int32
    }

    public let conditions: [PathRuleCondition]
    private let nodes: UnsafeMutableBufferPointer<Node>
    private let edges: UnsafeMutableBufferPointer<Edge>
    private let entries: UnsafeMutableBufferPointer<Entry>
    private let rules: UnsafeMutableBufferPointer<RuleData>
    /// Segment literals and hosts.
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    private let tokens: UnsafeMutableBufferPointer<Int16>

    public var isEmpty: Bool { conditions.isEmpty }

    public init(_ conditions: [PathRuleCondition]) {
        self.conditions = conditions
        // Built as a pointer-linked trie, then laid out flat for the walk.
        final class Building {
            var children: [([UInt8], Building)] = []
            var entries: [Entry] = []
            func child(_ segment: [UInt8]) -> Building {
                if let found = children.first(where: { $0.0 == segment }) { return found.1 }
                let made = Building()
                children.append((segment, made))
                return made
            }
        }
        let root = Building()
        for (index, condition) in conditions.enumerated() {
            let segments = Self.segments(of: Array(condition.glob.pattern.utf8))
            var node = root
            var literal = 0
            while literal < segments.count, !segments[literal].contains(UInt8(ascii: "*")) {
                node = node.child(segments[literal])
                literal += 1
            }
            let rest = segments[literal...]
            let kind: Kind
            if rest.isEmpty {
                kind = .exact
            } else if rest.count == 1, rest.first!.count >= 2, rest.first!.allSatisfy({ $0 == UInt8(ascii: "*") }) {
                kind = .subtree
            } else {
                kind = .glob
            }
            node.entries.append(Entry(rule: Int32(index), kind: kind))
        }
        var nodes: [Node] = [], edges: [Edge] = [], entries: [Entry] = [], bytes: [UInt8] = []
        var queue: [Building] = [root]
        nodes.append(Node())
        var next = 0
        while next < queue.count {
            let building = queue[next]
            nodes[next].entryStart = Int32(entries.count)
            nodes[next].entryCount = Int32(building.entries.count)
            entries += building.entries  // in rule order already
            nodes[next].edgeStart = Int32(edges.count)
            nodes[next].edgeCount = Int32(building.children.count)
            // By length, then bytes: the walk finds a segment by binary search.
            building.children.sort { a, b in a.0.count != b.0.count ? a.0.count < b.0.count : a.0.lexicographicallyPrecedes(b.0) }
            for (segment, child) in building.children {
                edges.append(Edge(segmentStart: Int32(bytes.count), segmentCount: Int32(segment.count),
                                  child: Int32(queue.count)))
                bytes += segment
                queue.append(child)
                nodes.append(Node())
            }
            next += 1
        }
        var tokens: [Int16] = []
        var rules: [RuleData] = []
        for condition in conditions {
            let host = condition.host.map { Array($0.utf8) }
            let compiled = condition.glob.compiled
            let suffix = compiled.tokens.reversed().prefix { $0 >= 0 }.reversed().map { UInt8($0) }
            rules.append(RuleData(
                methods: condition.methods, hostStart: Int32(bytes.count), hostCount: Int32(host?.count ?? -1),
                tokenStart: Int32(tokens.count), tokenCount: Int32(compiled.tokens.count),
                endsWithSlashGlobstar: compiled.endsWithSlashGlobstar,
                suffixStart: Int32(bytes.count + (host?.count ?? 0)), suffixCount: Int32(suffix.count)))
            bytes += host ?? []
            bytes += suffix
            tokens += compiled.tokens
        }
        self.nodes = Self.own(nodes)
        self.edges = Self.own(edges)
        self.entries = Self.own(entries)
        self.rules = Self.own(rules)
        self.bytes = Self.own(bytes)
        self.tokens = Self.own(tokens)
    }

    deinit {
        nodes.deallocate()
        edges.deallocate()
        entries.deallocate()
        rules.deallocate()
        bytes.deallocate()
        tokens.deallocate()
    }

    private static func own<T>(_ array: [T]) -> UnsafeMutableBufferPointer<T> {
        let memory = UnsafeMutableBufferPointer<T>.allocate(capacity: max(1, array.count))
        _ = memory.initialize(from: array)
        return UnsafeMutableBufferPointer(rebasing: memory[0..<array.count])
    }

    /// `/a/b/` → `a`, `b`, `` (the segments after the leading `/`).
    static func segments(of path: [UInt8]) -> [[UInt8]] {
        guard path.first == UInt8(ascii: "/") else { return [path] }
        return path.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init)
    }

    /// The index of the first rule matching, nil when none does. `path` is normalized;
    /// `host` is the request's `Host` value (a port is ignored), nil when it has none.
    public func firstMatch(path: UnsafeRawBufferPointer, method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        guard !nodes.isEmpty, !rules.isEmpty else { return nil }
        var best = Int32.max
        var node = 0
        // After the leading `/`; `atEnd` once the last segment has been taken.
        var position = path.first == UInt8(ascii: "/") ? 1 : path.count
        var atEnd = path.count == 0
        while true {
            let here = nodes[node]
            if here.entryCount > 0 {
                best = firstEntry(here, below: best, atEnd: atEnd, path, method, host)
            }
            if atEnd || here.edgeCount == 0 { break }
            var end = position
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            let length = end - position
            guard let found = child(of: here, path.baseAddress! + position, length) else { break }
            node = found
            if end >= path.count { atEnd = true } else { position = end + 1 }
        }
        return best == Int32.max ? nil : Int(best)
    }

    /// The child of `node` along the segment at `segment`, by binary search over its edges
    /// (ordered by length, then bytes).
    @inline(__always) private func child(of node: Node, _ segment: UnsafeRawPointer, _ length: Int) -> Int? {
        var low = Int(node.edgeStart), high = Int(node.edgeStart + node.edgeCount)
        while low < high {
            let middle = (low + high) / 2
            let edge = edges[middle]
            var order = Int(edge.segmentCount) - length
            if order == 0 && length > 0 {
                order = Int(memcmp(bytes.baseAddress! + Int(edge.segmentStart), segment, length))
            }
            if order == 0 { return Int(edge.child) }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// The first rule of `node` below `best` that matches (entries are in rule order), else `best`.
    private func firstEntry(
        _ node: Node, below best: Int32, atEnd: Bool, _ path: UnsafeRawBufferPointer, _ method: HTTPMethod,
        _ host: UnsafeRawBufferPointer?
    ) -> Int32 {
        for i in Int(node.entryStart)..<Int(node.entryStart + node.entryCount) {
            let entry = entries[i]
            if entry.rule >= best { break }
            let rule = rules[Int(entry.rule)]
            guard rule.methods.admits(method) else { continue }
            if rule.hostCount >= 0 {
                let expected = UnsafeBufferPointer(rebasing: bytes[Int(rule.hostStart)..<Int(rule.hostStart + rule.hostCount)])
                guard let host, Self.hostEquals(host, expected) else { continue }
            }
            switch entry.kind {
            case .exact: if !atEnd { continue }
            case .subtree: break
            case .glob:
                let suffix = Int(rule.suffixCount)
                if suffix > 0 {
                    guard path.count >= suffix, memcmp(path.baseAddress! + (path.count - suffix),
                                                       bytes.baseAddress! + Int(rule.suffixStart), suffix) == 0 else { continue }
                }
                let globTokens = UnsafeBufferPointer(
                    rebasing: tokens[Int(rule.tokenStart)..<Int(rule.tokenStart + rule.tokenCount)])
                if !PathGlob.matches(path, tokens: globTokens, endsWithSlashGlobstar: rule.endsWithSlashGlobstar) {
                    continue
                }
            }
            return entry.rule
        }
        return best
    }

    /// The first match by trying each rule in order: the meaning the trie must keep.
    public func firstMatchByScan(path: UnsafeRawBufferPointer, method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        conditions.firstIndex { $0.matches(path: path, method: method, host: host) }
    }

    /// `given` (a `Host` value: `name`, `name:port`, `[v6]:port`) names `host` (lower case,
    /// no trailing dot), ignoring the case of letters, the port and trailing dots
    /// (`admin.example.com.` is the same host to DNS, to the upstream and to most vhost
    /// matchers, so a rule for one holds for the other).
    public static func hostEquals<C: Collection>(_ given: UnsafeRawBufferPointer, _ host: C) -> Bool where C.Element == UInt8 {
        var end = given.count
        if given.first == UInt8(ascii: "[") {
            if let close = given.firstIndex(of: UInt8(ascii: "]")) { end = close + 1 }
        } else {
            if let colon = given.firstIndex(of: UInt8(ascii: ":")) { end = colon }
            while end > 0, given[end - 1] == UInt8(ascii: ".") { end -= 1 }
        }
        guard end == host.count else { return false }
        var i = 0
        for expected in host {
            var c = given[i]
            if c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") { c |= 0x20 }
            if c != expected { return false }
            i += 1
        }
        return true
    }
}
