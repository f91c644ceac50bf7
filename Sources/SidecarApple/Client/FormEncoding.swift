/// `application/x-www-form-urlencoded` bodies: every byte outside `A-Z a-z 0-9 - . _ ~` is
/// percent-encoded (space as `%20`, never `+`), so no value can alter the field structure.
public enum FormEncoding {
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            appendEncoded(name, to: &out)
            out.append(UInt8(ascii: "="))
            appendEncoded(value, to: &out)
        }
        return out
    }

    private static let hex: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func appendEncoded(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
    }

    private static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
