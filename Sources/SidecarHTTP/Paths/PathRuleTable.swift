#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The methods a rule applies to; empty: every method. Methods outside the standard set
/// (`.other`) match only a rule without a method list.
public struct HTTPMethodSet: Sendable, Hashable {
    public private(set) var bits: UInt16 = 0

    public init() {}

    public init(_ methods: [HTTPMethod]) {
        for method in methods { insert(method) }
    }

    public var isEmpty: Bool { bits == 0 }

    public mutating func insert(_ method: HTTPMethod) { bits |= Self.bit(method) }

    @inline(__always) public func admits(_ method: HTTPMethod) -> Bool { bits == 0 || bits & Self.bit(method) != 0 }

    /// Every method `other` admits, this one admits too.
    public func covers(_ other: HTTPMethodSet) -> Bool { bits == 0 || (other.bits != 0 && other.bits & ~bits == 0) }

    @inline(__always) private static func bit(_ method: HTTPMethod) -> UInt16 {
        switch method {
        case .get: 1 << 0
        case .head: 1 << 1
        case .post: 1 << 2
        case .put: 1 << 3
        case .delete: 1 << 4
        case .options: 1 << 5
        case .patch: 1 << 6
        case .trace: 1 << 7
        case .connect: 1 << 8
        case .other: 1 << 15
        }
    }

    /// The method named `name` (upper case, as on the request line), nil for any other name.
    public static func method(named name: String) -> HTTPMethod? {
        switch name {
        case "GET": .get
        case "HEAD": .head
        case "POST": .post
        case "PUT": .put
        case "DELETE": .delete
        case "OPTIONS": .options
        case "PATCH": .patch
        case "TRACE": .trace
        case "CONNECT": .connect
        default: nil
        }
    }
}

/// What a rule matches: a path glob on the normalized path, optionally methods and a host.
public struct PathRuleCondition: Sendable, Hashable {
    public var glob: PathGlob
    public var methods: HTTPMethodSet
    /// Lower-case host name or IP literal (IPv6 in brackets), compared with the request's
    /// `Host` without its port; nil: any host.
    public var host: String?

    public init(glob: String, methods: HTTPMethodSet = HTTPMethodSet(), host: String? = nil) {
        self.glob = PathGlob(glob)
        self.methods = methods
        self.host = host?.lowercased()
    }

    /// The reference meaning of a condition, one rule at a time (what the table must agree with).
    public func matches(path: UnsafeRawBufferPointer, method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Bool {
        methods.admits(method) && hostMatches(host) && glob.matches(path)
    }

    func hostMatches(_ given: UnsafeRawBufferPointer?) -> Bool {
        guard let host else { return true }
        guard let given else { return false }
        return PathRuleTable.hostEquals(given, host.utf8)
    }
}

/// An ordered list of rule conditions compiled once into a trie of literal path segments:
/// a request walks its path's segments down the trie and only the rules hanging on the nodes
/// it passes are looked at (a rule hangs on the node of the literal segments its glob starts
/// with, so every path it can match passes that node). First match wins, as in a scan of the
/// list from the top; `firstMatchByScan` is that scan, kept as the reference.
public final class PathRuleTable: Sendable {
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

    public let conditions: [PathRuleCondition]
    private let nodes: [Node]
    private let edges: [Edge]
    private let entries: [Entry]
    private let segmentBytes: [UInt8]
    private let methodBits: [HTTPMethodSet]
    /// Host of each rule as bytes; empty array with `hasHost` false: any host.
    private let hosts: [[UInt8]]
    private let hasHost: [Bool]

    public var isEmpty: Bool { conditions.isEmpty }

    public init(_ conditions: [PathRuleCondition]) {
        self.conditions = conditions
        // Built as a pointer-linked trie, then laid out flat (one array each) for the walk.
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
            for (segment, child) in building.children {
                edges.append(Edge(segmentStart: Int32(bytes.count), segmentCount: Int32(segment.count),
                                  child: Int32(queue.count)))
                bytes += segment
                queue.append(child)
                nodes.append(Node())
            }
            next += 1
        }
        self.nodes = nodes
        self.edges = edges
        self.entries = entries
        segmentBytes = bytes
        methodBits = conditions.map(\.methods)
        hosts = conditions.map { Array(($0.host ?? "").utf8) }
        hasHost = conditions.map { $0.host != nil }
    }

    /// `/a/b/` → `a`, `b`, `` (the segments after the leading `/`).
    static func segments(of path: [UInt8]) -> [[UInt8]] {
        guard path.first == UInt8(ascii: "/") else { return [path] }
        return path.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Array.init)
    }

    /// The index of the first rule matching, nil when none does. `path` is normalized;
    /// `host` is the request's `Host` value (a port is ignored), nil when it has none.
    public func firstMatch(path: UnsafeRawBufferPointer, method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        guard !conditions.isEmpty else { return nil }
        return nodes.withUnsafeBufferPointer { nodes in
            edges.withUnsafeBufferPointer { edges in
                segmentBytes.withUnsafeBytes { segmentBytes in
                    walk(path, method, host, nodes, edges, segmentBytes)
                }
            }
        }
    }

    private func walk(
        _ path: UnsafeRawBufferPointer, _ method: HTTPMethod, _ host: UnsafeRawBufferPointer?,
        _ nodes: UnsafeBufferPointer<Node>, _ edges: UnsafeBufferPointer<Edge>, _ segmentBytes: UnsafeRawBufferPointer
    ) -> Int? {
        var best = Int32.max
        var node = 0
        // After the leading `/`; `atEnd` once the last segment has been taken.
        var position = path.first == UInt8(ascii: "/") ? 1 : path.count
        var atEnd = path.count == 0
        while true {
            let here = nodes[node]
            if here.entryCount > 0 {
                best = min(best, firstEntry(here, below: best, atEnd: atEnd, path, method, host))
            }
            if atEnd || here.edgeCount == 0 { break }
            var end = position
            while end < path.count, path[end] != UInt8(ascii: "/") { end += 1 }
            let length = end - position
            var found = -1
            for e in Int(here.edgeStart)..<Int(here.edgeStart + here.edgeCount) {
                let edge = edges[e]
                guard Int(edge.segmentCount) == length else { continue }
                if length == 0 || memcmp(path.baseAddress! + position, segmentBytes.baseAddress! + Int(edge.segmentStart), length) == 0 {
                    found = Int(edge.child)
                    break
                }
            }
            guard found >= 0 else { break }
            node = found
            if end >= path.count { atEnd = true } else { position = end + 1 }
        }
        return best == Int32.max ? nil : Int(best)
    }

    /// The first rule of `node` below `best` that matches (entries are in rule order).
    private func firstEntry(
        _ node: Node, below best: Int32, atEnd: Bool, _ path: UnsafeRawBufferPointer, _ method: HTTPMethod,
        _ host: UnsafeRawBufferPointer?
    ) -> Int32 {
        entries.withUnsafeBufferPointer { entries in
            for i in Int(node.entryStart)..<Int(node.entryStart + node.entryCount) {
                let entry = entries[i]
                if entry.rule >= best { break }
                let rule = Int(entry.rule)
                guard methodBits[rule].admits(method) else { continue }
                if hasHost[rule] {
                    guard let host, hosts[rule].withUnsafeBytes({ Self.hostEquals(host, $0) }) else { continue }
                }
                switch entry.kind {
                case .exact: if !atEnd { continue }
                case .subtree: break
                case .glob: if !conditions[rule].glob.matches(path) { continue }
                }
                return entry.rule
            }
            return best
        }
    }

    /// The first match by trying each rule in order: the meaning the trie must keep.
    public func firstMatchByScan(path: UnsafeRawBufferPointer, method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        conditions.firstIndex { $0.matches(path: path, method: method, host: host) }
    }

    /// `given` (a `Host` value: `name`, `name:port`, `[v6]:port`) names `host` (lower case),
    /// ignoring the case of letters and the port.
    static func hostEquals<C: Collection>(_ given: UnsafeRawBufferPointer, _ host: C) -> Bool where C.Element == UInt8 {
        var end = given.count
        if given.first == UInt8(ascii: "[") {
            if let close = given.firstIndex(of: UInt8(ascii: "]")) { end = close + 1 }
        } else if let colon = given.firstIndex(of: UInt8(ascii: ":")) {
            end = colon
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
