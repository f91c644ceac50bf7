/// Chooses among a fixed set of languages by RFC 4647 §3.4 lookup over an `Accept-Language`
/// field (RFC 9110 §12.5.4): the ranges are tried in order of weight (earlier first among
/// equals), each one as written and then shortened a subtag at a time from the end, and the
/// first that names a known tag wins.
///
/// The field is whatever a client sends, so the scan is bounded: at most `maximumBytes` of
/// all its lines together and `maximumRanges` ranges are read; a range that is not a
/// well-formed language range or carries anything but a valid weight is skipped, never
/// repaired; nothing of the field is kept or returned, only the index of a known tag.
public struct LanguageLookup: Sendable {
    public static let maximumBytes = 4096
    public static let maximumRanges = 32
    /// Longer than any tag worth looking up (BCP 47 allows 8 characters a subtag), short
    /// enough that shortening one costs nothing.
    static let maximumRangeBytes = 64

    /// Each known range, lower-cased, and the choice it stands for.
    private let ranges: [(bytes: [UInt8], choice: Int)]

    /// `tags`: a language range (any case, `-`-separated) and the choice it means; several
    /// ranges may mean one choice (`zh-TW` and `zh-Hant`).
    public init(_ tags: [(range: String, choice: Int)]) {
        ranges = tags.map { (Array($0.range.utf8).map(Self.lowercased), $0.choice) }
    }

    /// The choice of the most preferred range that names a known tag; nil when none does
    /// (no field, only `*`, only weight 0, nothing well-formed).
    public func choose<Values: Sequence>(_ values: Values) -> Int? where Values.Element == ArraySlice<UInt8> {
        var best: (weight: Int, choice: Int)?
        var budget = Self.maximumBytes
        var rangesLeft = Self.maximumRanges
        for value in values {
            guard budget > 0, rangesLeft > 0 else { break }
            let field = value.prefix(budget)
            budget -= field.count
            var start = field.startIndex
            while start < field.endIndex, rangesLeft > 0 {
                let end = field[start...].firstIndex(of: UInt8(ascii: ",")) ?? field.endIndex
                let element = Self.trimmed(field[start..<end])
                start = end < field.endIndex ? end + 1 : end
                guard !element.isEmpty else { continue }  // `a,,b` is a valid list
                rangesLeft -= 1
                guard let (range, weight) = Self.parse(element), weight > 0, weight > (best?.weight ?? 0),
                      let choice = lookup(range) else { continue }
                best = (weight, choice)
                if weight == 1000 { return choice }  // nothing later can outrank it
            }
        }
        return best?.choice
    }

    /// `range` as written, then without its last subtag (and a single-letter subtag left
    /// in front of it: an extension or private-use singleton means nothing alone), and so on.
    private func lookup(_ range: ArraySlice<UInt8>) -> Int? {
        guard !(range.count == 1 && range.first == UInt8(ascii: "*")) else { return nil }  // §3.4: ignored
        var end = range.endIndex
        while end > range.startIndex {
            let candidate = range[range.startIndex..<end]
            for known in ranges where known.bytes.count == candidate.count {
                if zip(known.bytes, candidate).allSatisfy({ $0 == Self.lowercased($1) }) { return known.choice }
            }
            guard let dash = candidate.lastIndex(of: UInt8(ascii: "-")) else { return nil }
            end = dash
            if end - 2 >= range.startIndex, range[end - 2] == UInt8(ascii: "-") { end -= 2 }
        }
        return nil
    }

    /// A language range and its weight in thousandths (1000 without `q`); nil when either
    /// is malformed or another parameter follows.
    static func parse(_ element: ArraySlice<UInt8>) -> (range: ArraySlice<UInt8>, weight: Int)? {
        let semicolon = element.firstIndex(of: UInt8(ascii: ";")) ?? element.endIndex
        let range = trimmed(element[element.startIndex..<semicolon])
        guard isLanguageRange(range) else { return nil }
        guard semicolon < element.endIndex else { return (range, 1000) }
        let parameter = trimmed(element[(semicolon + 1)...])
        guard parameter.count >= 3, lowercased(parameter[parameter.startIndex]) == UInt8(ascii: "q"),
              parameter[parameter.startIndex + 1] == UInt8(ascii: "="),
              let weight = weight(parameter[(parameter.startIndex + 2)...]) else { return nil }
        return (range, weight)
    }

    /// RFC 9110 §12.4.2: `0[.ddd]` or `1[.000]`, in thousandths.
    static func weight(_ text: ArraySlice<UInt8>) -> Int? {
        guard let first = text.first, first == UInt8(ascii: "0") || first == UInt8(ascii: "1"), text.count <= 5 else {
            return nil
        }
        var value = Int(first - UInt8(ascii: "0")) * 1000
        guard text.count > 1 else { return value }
        guard text[text.startIndex + 1] == UInt8(ascii: ".") else { return nil }
        var scale = 100
        for digit in text.dropFirst(2) {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value += Int(digit - UInt8(ascii: "0")) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }

    /// `*`, or 1–8 letters then `-` and 1–8 letters or digits, any number of times (RFC 4647 §2.1).
    static func isLanguageRange(_ range: ArraySlice<UInt8>) -> Bool {
        guard !range.isEmpty, range.count <= maximumRangeBytes else { return false }
        if range.count == 1 && range.first == UInt8(ascii: "*") { return true }
        var length = 0
        var first = true
        for b in range {
            if b == UInt8(ascii: "-") {
                guard length > 0 else { return false }
                length = 0
                first = false
                continue
            }
            let letter = (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z")
            let digit = b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")
            guard letter || (digit && !first) else { return false }
            length += 1
            guard length <= 8 else { return false }
        }
        return length > 0
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let b = slice.first, b == 0x20 || b == 0x09 { slice.removeFirst() }
        while let b = slice.last, b == 0x20 || b == 0x09 { slice.removeLast() }
        return slice
    }

    private static func lowercased(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
}
