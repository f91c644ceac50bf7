import SidecarHTTP

/// `application/x-www-form-urlencoded` bodies: every byte outside `A-Z a-z 0-9 - . _ ~` is
/// percent-encoded (space as `%20`, never `+`), so no value can alter the field structure.
public enum FormEncoding {
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            PercentEncoding.append(name.utf8, into: &out)
            out.append(UInt8(ascii: "="))
            PercentEncoding.append(value.utf8, into: &out)
        }
        return out
    }
}
