import SidecarHTTP

/// Every spelling of a path is decided and forwarded consistently, or refused: for each
/// `paths.encoded_slashes` mode the normalized path is stable, and the lenient reading the
/// decision uses is exactly what a lenient upstream (Tomcat's `;` cut, IIS's trimming, a
/// case-insensitive router, a decoding static server) reads from the forwarded path.
enum PathFuzzChecks {
    static func run(_ input: UnsafeRawBufferPointer) {
        for mode in EncodedSeparators.allCases { normalized(input, mode) }
    }

    static func normalized(_ input: UnsafeRawBufferPointer, _ mode: EncodedSeparators) {
        var out: [UInt8] = []
        guard (try? PathNormalizer.normalize(input, separators: mode, into: &out)) != nil else {
            FuzzChecks.check(out.isEmpty, "nothing appended on error")
            return
        }
        if mode == .reject { FuzzChecks.check(!hasSeparatorSpelling(input), "an encoded separator is refused") }
        if mode != .keep { FuzzChecks.check(!hasSeparatorSpelling(out), "no encoded separator is forwarded") }
        var again: [UInt8] = []
        let ok = out.withUnsafeBytes { (try? PathNormalizer.normalize($0, separators: mode, into: &again)) != nil }
        FuzzChecks.check(ok && again == out, "normalization is idempotent in every mode")
        FuzzChecks.check(!contains(out, [0x2F, 0x2F]), "no empty segment is forwarded")
        var lenient: [UInt8] = []
        out.withUnsafeBytes { LenientPath.append($0, into: &lenient) }
        FuzzChecks.check(out.withUnsafeBytes { LenientPath.isSame($0) } == (lenient == out), "isSame agrees")
        FuzzChecks.check(!contains(lenient, [0x2F, 0x2F]), "the lenient reading empties no segment")
        if mode == .keep { return }  // a kept %2F is a separator to the model: unsafe, as documented
        FuzzChecks.check(decoded(lenient) == upstreamReading(out), "the decision reads the path as a lenient upstream")
    }

    /// What a lenient upstream reads: per segment, `;parameters` cut before decoding, then
    /// `%XX` decoded, trailing dots and spaces trimmed, ASCII folded; `.`, `..` and empty
    /// segments resolved; a trailing `/` kept.
    static func upstreamReading(_ path: [UInt8]) -> [UInt8] {
        var segments: [[UInt8]] = []
        for raw in path.split(separator: 0x2F, omittingEmptySubsequences: false) {
            var segment = decoded(Array(raw.prefix { $0 != 0x3B }))
            while let last = segment.last, last == 0x2E || last == 0x20 { segment.removeLast() }
            segment = segment.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            if segment.isEmpty || segment == [0x2E] { continue }
            if segment == [0x2E, 0x2E] {
                if !segments.isEmpty { segments.removeLast() }
                continue
            }
            segments.append(segment)
        }
        var out: [UInt8] = []
        for segment in segments { out += [0x2F] + segment }
        if out.isEmpty || path.last == 0x2F { out.append(0x2F) }
        return out
    }

    static func decoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == 0x25, i + 2 < bytes.count, let hi = hex(bytes[i + 1]), let lo = hex(bytes[i + 2]) {
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// `\`, `%2F` or `%5C` (any case) somewhere in `bytes`.
    static func hasSeparatorSpelling<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        let a = Array(bytes)
        for i in a.indices {
            if a[i] == 0x5C { return true }
            if a[i] == 0x25, i + 2 < a.count, a[i + 1] == 0x32 || a[i + 1] == 0x35 {
                let lo = a[i + 2] | 0x20
                if (a[i + 1] == 0x32 && lo == 0x66) || (a[i + 1] == 0x35 && lo == 0x63) { return true }
            }
        }
        return false
    }

    static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard bytes.count >= needle.count else { return false }
        for i in 0...(bytes.count - needle.count) where Array(bytes[i..<(i + needle.count)]) == needle { return true }
        return false
    }
}
