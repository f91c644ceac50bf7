/// Rules for bytes this process writes into a head.
public enum HeaderValue {
    /// A value can be emitted when it has no CR, LF, NUL or other control character (HTAB
    /// allowed) and no leading/trailing whitespace that a reader would trim differently.
    public static func isSafe(_ value: UnsafeRawBufferPointer) -> Bool {
        for c in value where !ASCII.isFieldValueChar(c) { return false }
        if let first = value.first, ASCII.isOWS(first) { return false }
        if let last = value.last, ASCII.isOWS(last) { return false }
        return true
    }

    public static func isSafe(_ value: String) -> Bool {
        var s = value
        return s.withUTF8 { isSafe(UnsafeRawBufferPointer($0)) }
    }

    /// A field name is one or more tchars.
    public static func isValidName(_ name: UnsafeRawBufferPointer) -> Bool {
        guard !name.isEmpty else { return false }
        for c in name where !ASCII.isTokenChar(c) { return false }
        return true
    }

    public static func isValidName(_ name: String) -> Bool {
        var s = name
        return s.withUTF8 { isValidName(UnsafeRawBufferPointer($0)) }
    }
}
