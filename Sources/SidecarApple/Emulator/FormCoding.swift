import SidecarHTTP

/// `application/x-www-form-urlencoded` and query-string coding for the emulator.
enum FormCoding {
    enum Failure: Error, Equatable {
        case badEscape
        case notUTF8
        case duplicate(String)
    }

    /// Decodes `name=value&…` pairs. In a query string `+` is a literal plus (Apple does not
    /// read it as a space, which is why `scope=name+email` is refused); in a form body it is
    /// a space.
    static func pairs(_ raw: String, plusIsSpace: Bool) throws(Failure) -> [(String, String)] {
        var result: [(String, String)] = []
        for part in raw.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let bytes = Array(part)
            let equals = bytes.firstIndex(of: UInt8(ascii: "=")) ?? bytes.endIndex
            let name = try decode(bytes[..<equals], plusIsSpace: plusIsSpace)
            let value = equals < bytes.endIndex
                ? try decode(bytes[(equals + 1)...], plusIsSpace: plusIsSpace) : ""
            result.append((name, value))
        }
        return result
    }

    /// The pairs as a dictionary; a repeated name is refused (ambiguous, as Apple treats it).
    static func parameters(_ raw: String, plusIsSpace: Bool) throws(Failure) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in try pairs(raw, plusIsSpace: plusIsSpace) {
            guard result[name] == nil else { throw .duplicate(name) }
            result[name] = value
        }
        return result
    }

    private static func decode(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) throws(Failure) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let c = bytes[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex,
                      let hi = HexDigit.value(bytes[i + 1]), let lo = HexDigit.value(bytes[i + 2])
                else { throw .badEscape }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(plusIsSpace && c == UInt8(ascii: "+") ? UInt8(ascii: " ") : c)
                i += 1
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw .notUTF8 }
        return text
    }


    /// Percent-encodes every byte outside the unreserved set.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(c))
            default:
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                out += "%"
                out.unicodeScalars.append(digits[Int(c >> 4)])
                out.unicodeScalars.append(digits[Int(c & 15)])
            }
        }
        return out
    }

    static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { escape($0.0) + "=" + escape($0.1) }.joined(separator: "&")
    }
}
