/// A client's `tracestate`, checked against W3C Trace Context level 1 before it travels on:
/// comma-separated list-members `key=value` (empty members and spaces or tabs around them
/// allowed), at most 32 members, keys unique. A key is `lcalpha 0*255(lcalpha / DIGIT / "_" /
/// "-" / "*" / "/")`, or `tenant@system` (a tenant of 1–241 of those characters starting with
/// a letter or digit, a system of 1–14 starting with a letter); a value is 1–256 characters
/// of 0x20–0x7E other than `,` and `=`, not ending in a space. What fails any of this is not
/// a tracestate, and is dropped rather than forwarded: the upstream and its tracing vendors
/// parse it, and markup or JSON smuggled in it would reach them from any client.
public enum TraceState {
    public static let maxMembers = 32

    /// Whether the `tracestate` fields of a request, taken together as one list, are valid.
    /// Keys seen so far are kept in `keys` (`count` of them) to refuse a repeated one.
    static func scan(
        _ value: UnsafeRawBufferPointer, keys: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>, count: inout Int
    ) -> Bool {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var first = start, last = end
            while first < last, isOWS(value[first]) { first += 1 }
            while last > first, isOWS(value[last - 1]) { last -= 1 }
            if first < last {
                let member = UnsafeRawBufferPointer(rebasing: value[first..<last])
                guard count < maxMembers, let key = memberKey(member) else { return false }
                for i in 0..<count where keys[i].elementsEqual(key) { return false }
                keys[count] = key
                count += 1
            }
            start = end + 1
        }
        return true
    }

    /// The key of a valid `key=value` member; nil when either part is invalid.
    static func memberKey(_ member: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let equals = member.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let key = UnsafeRawBufferPointer(rebasing: member[..<equals])
        let value = UnsafeRawBufferPointer(rebasing: member[(equals + 1)...])
        guard isValidKey(key), isValidValue(value) else { return nil }
        return key
    }

    static func isValidKey(_ key: UnsafeRawBufferPointer) -> Bool {
        guard let at = key.firstIndex(of: UInt8(ascii: "@")) else {
            return (1...256).contains(key.count) && isLowerAlpha(key[0]) && key.dropFirst().allSatisfy(isKeyChar)
        }
        let tenant = key[..<at], system = key[(at + 1)...]
        return (1...241).contains(tenant.count) && (isLowerAlpha(tenant.first!) || isDigit(tenant.first!))
            && tenant.dropFirst().allSatisfy(isKeyChar)
            && (1...14).contains(system.count) && isLowerAlpha(system.first!) && system.dropFirst().allSatisfy(isKeyChar)
    }

    static func isValidValue(_ value: UnsafeRawBufferPointer) -> Bool {
        guard (1...256).contains(value.count), value[value.count - 1] != 0x20 else { return false }
        return value.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "=") }
    }

    @inline(__always) private static func isOWS(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }
    @inline(__always) private static func isLowerAlpha(_ c: UInt8) -> Bool { c >= 0x61 && c <= 0x7A }
    @inline(__always) private static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    @inline(__always) private static func isKeyChar(_ c: UInt8) -> Bool {
        isLowerAlpha(c) || isDigit(c) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: "*")
            || c == UInt8(ascii: "/")
    }
}

extension HeadView {
    /// Whether the request's `tracestate` fields together are one valid list (`TraceState`).
    public func tracestateIsValid() -> Bool {
        withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: TraceState.maxMembers) { keys in
            var count = 0
            for field in fields where field.name.count == 10 && !field.value.isEmpty
                && ByteCompare.equalsLowercased(bytes, field.name, "tracestate") {
                guard TraceState.scan(self[field.value], keys: keys, count: &count) else { return false }
            }
            return true
        }
    }
}
