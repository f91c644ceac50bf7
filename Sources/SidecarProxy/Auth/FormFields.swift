/// `application/x-www-form-urlencoded` bodies and query strings: `name=value&…`, `+` is a
/// space, `%XX` escapes. Anything malformed (a bad escape, invalid UTF-8) refuses the whole
/// input rather than guessing.
struct FormFields {
    private(set) var pairs: [(name: String, value: String)] = []

    init?(_ bytes: some Collection<UInt8>) {
        var name: [UInt8] = []
        var value: [UInt8] = []
        var inValue = false
        var iterator = bytes.makeIterator()
        var pending: UInt8? = nil
        func flush() -> Bool {
            defer {
                name.removeAll(keepingCapacity: true)
                value.removeAll(keepingCapacity: true)
                inValue = false
            }
            if name.isEmpty && value.isEmpty { return true }
            guard let n = String(validating: name, as: UTF8.self), let v = String(validating: value, as: UTF8.self)
            else { return false }
            pairs.append((n, v))
            return true
        }
        while let byte = pending ?? iterator.next() {
            pending = nil
            var decoded = byte
            switch byte {
            case UInt8(ascii: "&"):
                guard flush() else { return nil }
                continue
            case UInt8(ascii: "=") where !inValue:
                inValue = true
                continue
            case UInt8(ascii: "+"):
                decoded = 0x20
            case UInt8(ascii: "%"):
                guard let hi = iterator.next().flatMap(Self.hexValue), let lo = iterator.next().flatMap(Self.hexValue)
                else { return nil }
                decoded = hi << 4 | lo
            default:
                break
            }
            if inValue { value.append(decoded) } else { name.append(decoded) }
        }
        guard flush() else { return nil }
    }

    /// The only value of `name`; nil when absent or given more than once (ambiguous).
    func single(_ name: String) -> String? {
        var found: String?
        for pair in pairs where pair.name == name {
            guard found == nil else { return nil }
            found = pair.value
        }
        return found
    }

    func count(_ name: String) -> Int { pairs.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
