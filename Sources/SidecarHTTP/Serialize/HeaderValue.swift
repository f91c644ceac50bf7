/// Rules for bytes this process writes into a head.
public enum HeaderValue {
    /// A value can be emitted when it has no CR, LF, NUL or other control character (HTAB
    /// allowed) and no leading/trailing whitespace that a reader would trim differently.
    public static func isSafe(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress else { return true }
        // Eight bytes at a time: a word with no byte below 0x20 and none equal to 0x7F is all
        // field-value characters (the tests below are exact for "any byte"); a word that has
        // one (a tab, or a real control) is looked at byte by byte. The user id is checked so
        // on every session-cache miss.
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= value.count {
            let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let below20 = (word &- ones &* 0x20) & ~word & highs
            let del = word ^ (ones &* 0x7F)
            let isDel = (del &- ones) & ~del & highs
            if below20 | isDel != 0 {
                for offset in index..<(index + 8) where !ASCII.isFieldValueChar(value[offset]) { return false }
            }
            index += 8
        }
        while index < value.count {
            if !ASCII.isFieldValueChar(value[index]) { return false }
            index += 1
        }
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
