/// A JSON value as found in JOSE headers and JWT claims.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { value } else { nil } }

    /// An integer, also from an integral floating-point number (some encoders write `1.6E9`).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value) where value.rounded() == value && abs(value) < 9.0e15: Int64(value)
        default: nil
        }
    }

    /// A boolean given as JSON `true`/`false` or as the strings `"true"`/`"false"` (older Apple tokens).
    public var lenientBoolValue: Bool? {
        switch self {
        case .bool(let value): value
        case .string("true"): true
        case .string("false"): false
        default: nil
        }
    }
}

extension JSONValue: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }
}

extension JSONValue {
    /// Compact JSON text with object keys sorted (deterministic output for signing).
    public var jsonText: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .number(let value):
            if value.isFinite, value.rounded() == value, abs(value) < 9.0e15 { out += String(Int64(value)) }
            else if value.isFinite { out += "\(value)" }
            else { out += "null" }
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                members[key]?.write(to: &out)
            }
            out += "}"
        }
    }

    /// Writes `value` as a JSON string literal (quotes, escapes; control characters and DEL as
    /// `\uXXXX`). Shared by the serializer and the log handler.
    public static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// `value` as a JSON string literal.
    public static func quoted(_ value: String) -> String {
        var out = ""
        writeString(value, to: &out)
        return out
    }
}
