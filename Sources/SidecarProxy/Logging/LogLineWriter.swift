/// Appends log lines in either format to a byte buffer, without Foundation or allocation
/// beyond the buffer's growth.
///
/// JSON: `{"ts":"…","level":"info","msg":"request","key":value,…}` — numbers as numbers.
/// Text: `2026-11-24T16:18:41.123Z info request key=value key="a value"` — the application
/// log's text layout; values with spaces, quotes or control bytes are quoted and escaped.
struct LogLineWriter {
    enum Format { case json, text }

    var buffer: [UInt8] = []
    var format = Format.json

    mutating func begin(timestampPrefix: [UInt8], millis: Int, level: StaticString, message: StaticString) {
        switch format {
        case .json:
            append("{\"ts\":\"")
            buffer += timestampPrefix
            LogTimestamp.appendMillis(millis, to: &buffer)
            append("\",\"level\":\"")
            append(level)
            append("\",\"msg\":\"")
            append(message)
            buffer.append(UInt8(ascii: "\""))
        case .text:
            buffer += timestampPrefix
            LogTimestamp.appendMillis(millis, to: &buffer)
            buffer.append(UInt8(ascii: " "))
            append(level)
            buffer.append(UInt8(ascii: " "))
            append(message)
        }
    }

    mutating func end() {
        if format == .json { buffer.append(UInt8(ascii: "}")) }
        buffer.append(UInt8(ascii: "\n"))
    }

    mutating func int(_ key: StaticString, _ value: Int64) {
        writeKey(key)
        appendInt(value)
    }

    mutating func string(_ key: StaticString, _ value: ArraySlice<UInt8>) {
        writeKey(key)
        quoted(value)
    }

    mutating func string(_ key: StaticString, _ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeKey(key)
            quoted(utf8)
        }
    }

    /// A query string with the values of parameters that carry secrets (`code`, `state`,
    /// `id_token`, `token`, …) replaced by `***`, so no access log holds a credential.
    mutating func maskedQuery(_ key: StaticString, _ query: ArraySlice<UInt8>) {
        var masked: [UInt8] = []
        masked.reserveCapacity(query.count)
        var start = query.startIndex
        while start <= query.endIndex {
            let end = query[start...].firstIndex(of: UInt8(ascii: "&")) ?? query.endIndex
            let pair = query[start..<end]
            if let equals = pair.firstIndex(of: UInt8(ascii: "=")), SensitiveParameters.contains(pair[..<equals]) {
                masked += pair[...equals]
                masked += [UInt8(ascii: "*"), UInt8(ascii: "*"), UInt8(ascii: "*")]
            } else {
                masked += pair
            }
            if end == query.endIndex { break }
            masked.append(UInt8(ascii: "&"))
            start = end + 1
        }
        string(key, masked[...])
    }

    // The per-byte and per-piece appends below used to cost 11k instructions per access
    // line (callgrind), more than proxying the request; each piece is now one copy.

    private mutating func writeKey(_ key: StaticString) {
        let json = format == .json
        let count = key.utf8CodeUnitCount + (json ? 5 : 2)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { scratch in
            var at = 0
            func put(_ byte: UInt8) { scratch[at] = byte; at += 1 }
            if json { put(UInt8(ascii: ",")); put(UInt8(ascii: "\"")) } else { put(UInt8(ascii: " ")) }
            for i in 0..<key.utf8CodeUnitCount { put(key.utf8Start[i]) }
            if json { put(UInt8(ascii: "\"")); put(UInt8(ascii: ":")) } else { put(UInt8(ascii: "=")) }
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[0..<at]))
        }
    }

    private mutating func quoted<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        switch format {
        case .json:
            buffer.append(UInt8(ascii: "\""))
            escaped(bytes)
            buffer.append(UInt8(ascii: "\""))
        case .text:
            let plain = !bytes.isEmpty && !bytes.contains { $0 <= 0x20 || $0 >= 0x7f || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
            if plain {
                buffer += bytes
            } else {
                buffer.append(UInt8(ascii: "\""))
                escaped(bytes)
                buffer.append(UInt8(ascii: "\""))
            }
        }
    }

    /// Bytes outside printable ASCII, `"` and `\` escaped as JSON does (`\u00XX`); runs of
    /// bytes that need nothing are copied whole.
    private mutating func escaped<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { contiguous in
            var runStart = 0
            for (i, b) in contiguous.enumerated() where !Self.isPlain(b) {
                if i > runStart { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: contiguous[runStart..<i])) }
                escape(b)
                runStart = i + 1
            }
            if contiguous.count > runStart {
                buffer.append(contentsOf: UnsafeBufferPointer(rebasing: contiguous[runStart...]))
            }
        }
        guard done == nil else { return }
        for b in bytes {
            if Self.isPlain(b) { buffer.append(b) } else { escape(b) }
        }
    }

    @inline(__always)
    private static func isPlain(_ b: UInt8) -> Bool {
        b >= 0x20 && b < 0x7f && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\")
    }

    private mutating func escape(_ b: UInt8) {
        if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            buffer.append(UInt8(ascii: "\\"))
            buffer.append(b)
        } else {
            append("\\u00")
            buffer.append(hexDigit(b >> 4))
            buffer.append(hexDigit(b & 0xf))
        }
    }

    private mutating func append(_ s: StaticString) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private mutating func appendInt(_ value: Int64) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
            appendInt(value == Int64.min ? Int64.max : -value)
            return
        }
        var number = UInt64(value)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var at = 20
            repeat {
                at -= 1
                digits[at] = UInt8(ascii: "0") + UInt8(number % 10)
                number /= 10
            } while number > 0
            buffer.append(contentsOf: UnsafeBufferPointer(rebasing: digits[at...]))
        }
    }
}

/// Query parameters whose values are credentials or one-time secrets (compared
/// case-insensitively on the raw, still percent-encoded name).
enum SensitiveParameters {
    static let names: [[UInt8]] = [
        "code", "state", "id_token", "token", "access_token", "refresh_token", "client_secret",
        "nonce", "password", "secret", "identitytoken", "authorizationcode", "code_verifier", "session",
    ].map { Array($0.utf8) }

    static func contains(_ name: ArraySlice<UInt8>) -> Bool {
        names.contains { candidate in
            candidate.count == name.count
                && zip(candidate, name).allSatisfy { $0 == ($1 | (($1 >= 0x41 && $1 <= 0x5a) ? 0x20 : 0)) }
        }
    }
}

@inline(__always) func hexDigit(_ v: UInt8) -> UInt8 {
    v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10
}
