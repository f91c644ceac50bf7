import SidecarHTTP

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
                guard let hi = iterator.next().flatMap(HexDigit.value), let lo = iterator.next().flatMap(HexDigit.value)
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

}
