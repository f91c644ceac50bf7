/// The methods a rule applies to; empty: every method. Methods outside the standard set
/// (`.other`) match only a rule without a method list.
public struct HTTPMethodSet: Sendable, Hashable {
    public private(set) var bits: UInt16 = 0

    public init() {}

    public init(_ methods: [HTTPMethod]) {
        for method in methods { insert(method) }
    }

    public var isEmpty: Bool { bits == 0 }

    /// Each method in the set, `.other` last.
    public var methods: [HTTPMethod] {
        [.get, .head, .post, .put, .delete, .options, .patch, .trace, .connect, .other].filter { contains($0) }
    }

    @inline(__always) public func contains(_ method: HTTPMethod) -> Bool { bits & Self.bit(method) != 0 }

    public mutating func remove(_ method: HTTPMethod) { bits &= ~Self.bit(method) }

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

    /// The methods a method-override field value names (`X-HTTP-Method-Override: DELETE`):
    /// frameworks upper-case it and some split a list, so each comma-separated item counts,
    /// in any case; a name the sidecar does not know is `.other`.
    public mutating func insertOverrides(_ value: UnsafeRawBufferPointer) {
        var i = 0
        let n = value.count
        while i < n {
            var end = i
            while end < n, value[end] != UInt8(ascii: ",") { end += 1 }
            var start = i, stop = end
            while start < stop, value[start] == 0x20 || value[start] == 0x09 { start += 1 }
            while stop > start, value[stop - 1] == 0x20 || value[stop - 1] == 0x09 { stop -= 1 }
            if stop > start {
                let length = stop - start
                let method: HTTPMethod =
                    length > 7
                    ? .other
                    : withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 8) { name in
                        for k in 0..<length {
                            let c = value[start + k]
                            name[k] = c >= 0x61 && c <= 0x7A ? c & ~0x20 : c
                        }
                        return HTTPMethod.classify(UnsafeRawBufferPointer(name), 0, length)
                    }
                insert(method)
            }
            i = end + 1
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
        var host = host?.lowercased()
        while host?.hasSuffix(".") == true { host?.removeLast() }
        self.host = host
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
