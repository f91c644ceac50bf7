import SidecarHTTP

/// Appends log lines in either format to a byte buffer, without Foundation or allocation
/// beyond the buffer's growth.
///
/// JSON: `{"ts":"…","level":"info","msg":"request","key":value,…}` — numbers as numbers.
/// Text: `2026-11-24T16:18:41.123Z info request key=value key="a value"` — the application
/// log's text layout; values with spaces, quotes or control bytes are quoted and escaped.
///
/// An access line is ~40 small pieces written per request, so each piece is one bounds
/// check and a copy into `LineBuffer`, and runs of bytes that need no escaping are copied
/// whole: Array's append (uniqueness and capacity checks, generic copies) per piece would
/// cost more than proxying the request (Benchmarks/RESULTS.md).
struct LogLineWriter {
    enum Format { case json, text }

    let out = LineBuffer()
    var format = Format.json
    /// Where a masked query is composed before it is written (escaped, quoted): one buffer
    /// kept for every line, not one per line.
    private let scratch = LineBuffer(capacity: 256)

    /// A copy of what was written (tests and diagnostics; the access log writes `out.bytes`).
    var buffer: [UInt8] { out.array }

    mutating func begin(timestampPrefix: [UInt8], millis: Int, level: StaticString, message: StaticString) {
        if format == .json { append("{\"ts\":\"") }
        timestampPrefix.withUnsafeBufferPointer { out.append($0) }
        let digits = out.reserve(4)
        digits[0] = UInt8(ascii: "0") + UInt8(millis / 100 % 10)
        digits[1] = UInt8(ascii: "0") + UInt8(millis / 10 % 10)
        digits[2] = UInt8(ascii: "0") + UInt8(millis % 10)
        digits[3] = UInt8(ascii: "Z")
        out.commit(4)
        switch format {
        case .json:
            append("\",\"level\":\"")
            append(level)
            append("\",\"msg\":\"")
            append(message)
            out.append(UInt8(ascii: "\""))
        case .text:
            out.append(UInt8(ascii: " "))
            append(level)
            out.append(UInt8(ascii: " "))
            append(message)
        }
    }

    mutating func end() {
        if format == .json { out.append(UInt8(ascii: "}")) }
        out.append(UInt8(ascii: "\n"))
    }

    /// A key of the access line, spelled out once per format so writing it is one copy.
    struct Key {
        /// `,"name":`
        let json: StaticString
        /// ` name=`
        let text: StaticString
    }

    mutating func int(_ key: Key, _ value: Int64) {
        append(format == .json ? key.json : key.text)
        appendInt(value)
    }

    mutating func string(_ key: Key, _ value: ArraySlice<UInt8>) {
        value.withUnsafeBytes { string(key, $0) }
    }

    mutating func string(_ key: Key, _ value: UnsafeRawBufferPointer) {
        let keyText = format == .json ? key.json : key.text
        // The usual JSON value needs no escaping: key, quotes and value in one reservation.
        if format == .json, Self.isPlain(value) {
            let k = keyText.utf8CodeUnitCount, n = value.count
            let at = out.reserve(k + n + 2)
            SmallCopy.copy(at, keyText.utf8Start, k)
            at[k] = UInt8(ascii: "\"")
            if let source = value.baseAddress { SmallCopy.copy(at + k + 1, source, n) }
            at[k + 1 + n] = UInt8(ascii: "\"")
            out.commit(k + n + 2)
            return
        }
        append(keyText)
        quoted(value.assumingMemoryBound(to: UInt8.self))
    }

    /// Whether no byte of `value` needs escaping (`isPlain`), eight bytes a step.
    static func isPlain(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress else { return true }
        let count = value.count
        if count < 8 {
            for i in 0..<count where !isPlain(base.load(fromByteOffset: i, as: UInt8.self)) { return false }
            return true
        }
        var i = 0
        while i + 8 <= count {
            guard allPlain(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) else { return false }
            i += 8
        }
        return i == count || allPlain(base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
    }

    /// A value the caller knows to be non-empty and bare — only bytes 0x21–0x7E other than
    /// `"` and `\` (a request id, a method, a user id checked once when its session was
    /// opened) — so it needs neither escaping nor, in text, quotes.
    mutating func bare(_ key: Key, _ value: ArraySlice<UInt8>) {
        value.withUnsafeBytes { bare(key, $0) }
    }

    mutating func bare(_ key: Key, _ value: UnsafeRawBufferPointer) {
        assert(!value.isEmpty && Self.isBare(value))
        let json = format == .json
        let keyText = json ? key.json : key.text
        let k = keyText.utf8CodeUnitCount
        let at = out.reserve(k + value.count + 2)
        SmallCopy.copy(at, keyText.utf8Start, k)
        var n = k
        if json { at[n] = UInt8(ascii: "\""); n += 1 }
        if let source = value.baseAddress { SmallCopy.copy(at + n, source, value.count) }
        n += value.count
        if json { at[n] = UInt8(ascii: "\""); n += 1 }
        out.commit(n)
    }

    /// A trace id: 32 lower-case hex digits, bare, written straight from its value.
    mutating func traceId(_ key: Key, _ trace: TraceContext) {
        let json = format == .json
        append(json ? key.json : key.text)
        let at = out.reserve(34)
        var n = 0
        if json { at[0] = UInt8(ascii: "\""); n = 1 }
        trace.writeTraceId(to: UnsafeMutableRawPointer(at + n))
        n += 32
        if json { at[n] = UInt8(ascii: "\""); n += 1 }
        out.commit(n)
    }

    /// Whether `bare` may write `value`.
    static func isBare(_ value: some Collection<UInt8>) -> Bool {
        !value.isEmpty && value.allSatisfy(isBare)
    }

    /// Whether `bare` may write `value`: eight bytes a step (a user id is checked once per
    /// session opened, ~45 bytes for Apple's).
    static func isBare(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress, !value.isEmpty else { return false }
        let spaces: UInt64 = 0x2020_2020_2020_2020
        var i = 0
        while i + 8 <= value.count {
            let w = (base + i).loadUnaligned(as: UInt64.self)
            guard allPlain(w), !hasZeroByte(w ^ spaces) else { return false }
            i += 8
        }
        if i < value.count, value.count >= 8 {  // the tail as the last eight bytes
            let w = (base + value.count - 8).loadUnaligned(as: UInt64.self)
            return allPlain(w) && !hasZeroByte(w ^ spaces)
        }
        while i < value.count {
            guard isBare(value[i]) else { return false }
            i += 1
        }
        return true
    }

    @inline(__always)
    private static func isBare(_ b: UInt8) -> Bool {
        b > 0x20 && b < 0x7F && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\")
    }

    /// Whether some byte of `v` is 0 (exact as a yes or no; which byte, not).
    @inline(__always)
    private static func hasZeroByte(_ v: UInt64) -> Bool {
        (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080 != 0
    }

    mutating func int(_ key: StaticString, _ value: Int64) {
        writeKey(key)
        appendInt(value)
    }

    mutating func string(_ key: StaticString, _ value: ArraySlice<UInt8>) {
        writeKey(key)
        value.withUnsafeBufferPointer { quoted($0) }
    }

    mutating func string(_ key: StaticString, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeKey(key)
            quoted(utf8)
        }
    }

    /// A query string with the values of parameters that carry secrets (`QueryRedaction`)
    /// replaced by `***`, so no access log holds a credential. Pairs end at `&`, `;` (an old
    /// separator some frameworks still split on) and `?` (a second query inside a value, e.g.
    /// `next=/a?code=…`, which a redirect would read), each kept as written.
    mutating func maskedQuery(_ key: StaticString, _ query: UnsafeRawBufferPointer, _ redaction: QueryRedaction) {
        let masked = scratch
        masked.removeAll()
        var start = 0
        while start <= query.count {
            var end = start
            while end < query.count, !Self.endsPair(query[end]) { end += 1 }
            let pair = UnsafeRawBufferPointer(rebasing: query[start..<end])
            if let equals = pair.firstIndex(of: UInt8(ascii: "=")),
               redaction.masks(UnsafeRawBufferPointer(rebasing: pair[..<equals])) {
                masked.append(pair.prefix(equals + 1))
                masked.append(UInt8(ascii: "*"))
                masked.append(UInt8(ascii: "*"))
                masked.append(UInt8(ascii: "*"))
            } else {
                masked.append(pair[...])
            }
            if end == query.count { break }
            masked.append(query[end])
            start = end + 1
        }
        writeKey(key)
        quoted(masked.bytes.assumingMemoryBound(to: UInt8.self))
    }

    @inline(__always)
    private static func endsPair(_ b: UInt8) -> Bool {
        b == UInt8(ascii: "&") || b == UInt8(ascii: ";") || b == UInt8(ascii: "?")
    }

    private mutating func writeKey(_ key: StaticString) {
        let json = format == .json
        let count = key.utf8CodeUnitCount
        let at = out.reserve(count + 4)
        var n = 0
        if json { at[0] = UInt8(ascii: ","); at[1] = UInt8(ascii: "\""); n = 2 } else { at[0] = UInt8(ascii: " "); n = 1 }
        SmallCopy.copy(at + n, key.utf8Start, count)
        n += count
        if json { at[n] = UInt8(ascii: "\""); at[n + 1] = UInt8(ascii: ":"); n += 2 } else { at[n] = UInt8(ascii: "="); n += 1 }
        out.commit(n)
    }

    private mutating func quoted(_ bytes: UnsafeBufferPointer<UInt8>) {
        switch format {
        case .json:
            out.append(UInt8(ascii: "\""))
            escaped(bytes)
            out.append(UInt8(ascii: "\""))
        case .text:
            let plain = !bytes.isEmpty && !bytes.contains { $0 <= 0x20 || $0 >= 0x7f || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
            if plain {
                out.append(bytes)
            } else {
                out.append(UInt8(ascii: "\""))
                escaped(bytes)
                out.append(UInt8(ascii: "\""))
            }
        }
    }

    /// Bytes outside printable ASCII, `"` and `\` escaped as JSON does (`\u00XX`); runs of
    /// bytes that need nothing are copied whole.
    private mutating func escaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var runStart = 0, i = 0
        while i < count {
            // Eight bytes at a time while all of them are plain (the usual case: ids, paths,
            // addresses), then byte by byte through the word that is not. A tail shorter than
            // a word is checked as the last eight bytes, overlapping bytes already written.
            if i + 8 <= count {
                if Self.allPlain(UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) {
                    i += 8
                    continue
                }
            } else if count >= 8, Self.allPlain(UnsafeRawPointer(base + count - 8).loadUnaligned(as: UInt64.self)) {
                break
            }
            let b = base[i]
            if !Self.isPlain(b) {
                if i > runStart { out.append(UnsafeBufferPointer(start: base + runStart, count: i - runStart)) }
                escape(b)
                runStart = i + 1
            }
            i += 1
        }
        if count > runStart { out.append(UnsafeBufferPointer(start: base + runStart, count: count - runStart)) }
    }

    /// Whether all eight bytes of `w` are plain (`isPlain`): none below 0x20, none at or
    /// above 0x7F, no `"` and no `\` (exact: each test only reports bytes that match).
    @inline(__always)
    static func allPlain(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below = (w &- ones &* 0x20) & ~w & highs  // a byte < 0x20
        let high = w & highs  // a byte >= 0x80
        let del = zeroBytes(w ^ (ones &* 0x7F))  // a byte == 0x7F
        let quote = zeroBytes(w ^ (ones &* 0x22)), backslash = zeroBytes(w ^ (ones &* 0x5C))
        return (below | high | del | quote | backslash) == 0
    }

    @inline(__always)
    static func isPlain(_ b: UInt8) -> Bool {
        b >= 0x20 && b < 0x7f && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\")
    }

    private mutating func escape(_ b: UInt8) {
        if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            out.append(UInt8(ascii: "\\"))
            out.append(b)
        } else {
            append("\\u00")
            out.append(HexDigit.lower(b >> 4))
            out.append(HexDigit.lower(b & 0xf))
        }
    }

    private mutating func append(_ s: StaticString) {
        out.append(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private mutating func appendInt(_ value: Int64) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            appendInt(value == Int64.min ? Int64.max : -value)
            return
        }
        var number = UInt64(value)
        var length = 1
        var probe = number
        while probe >= 10 { probe /= 10; length += 1 }
        let at = out.reserve(length)
        var i = length
        repeat {
            i -= 1
            at[i] = UInt8(ascii: "0") + UInt8(number % 10)
            number /= 10
        } while number > 0
        out.commit(length)
    }
}
