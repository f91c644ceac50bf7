import CByteScan

/// RFC 9113's rules for the fields of a request (§8.2, §8.3), held here rather than by
/// libnghttp2: its HTTP messaging checks are off (`nghttp2_option_set_no_http_messaging`),
/// because they read every name and value a second time — the session cookie's 300 bytes on
/// every request — after which `RequestHeadBuilder` would read them again for HTTP/1.1's
/// grammar. Here each field is read once, by a check that is both: what HTTP/2 makes
/// malformed (a stream error, as libnghttp2 answered) and what a strict HTTP/1.1 reader
/// refuses. libnghttp2 still does the framing, HPACK, flow control and stream states.
enum H2FieldRules {
    /// What a regular field's name makes it.
    enum Kind {
        case other
        case host
        case cookie
        case te
        case contentLength
        /// Connection-specific (RFC 9113 §8.2.2): Connection, Keep-Alive, Proxy-Connection,
        /// Transfer-Encoding, Upgrade — a request carrying one is malformed.
        case connectionSpecific
    }

    /// A regular field's name: lowercase tchars, at least one (§8.2.1: a name with an
    /// uppercase letter is malformed, and HTTP/1.1 has no empty name).
    static func isValidName(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let base = name.baseAddress, name.count > 0 else { return false }
        return sidecar_lowercase_token_length(base.assumingMemoryBound(to: UInt8.self), name.count) == name.count
    }

    /// A value: field-vchar, obs-text, SP and HTAB (no NUL, CR, LF or other control byte,
    /// no DEL), with no SP or HTAB at either end (§8.2.1).
    static func isValidValue(_ value: UnsafeRawBufferPointer) -> Bool {
        guard let base = value.baseAddress, let first = value.first, let last = value.last else { return true }
        guard !isWhitespace(first), !isWhitespace(last) else { return false }
        return sidecar_field_value_length(base.assumingMemoryBound(to: UInt8.self), value.count) == value.count
    }

    @inline(__always) private static func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 }

    static func kind(of name: UnsafeRawBufferPointer) -> Kind {
        switch name.count {
        case 2: return equals(name, "te") ? .te : .other
        case 4: return equals(name, "host") ? .host : .other
        case 6: return equals(name, "cookie") ? .cookie : .other
        case 7: return equals(name, "upgrade") ? .connectionSpecific : .other
        case 10: return equals(name, "connection") || equals(name, "keep-alive") ? .connectionSpecific : .other
        case 14: return equals(name, "content-length") ? .contentLength : .other
        case 16: return equals(name, "proxy-connection") ? .connectionSpecific : .other
        case 17: return equals(name, "transfer-encoding") ? .connectionSpecific : .other
        default: return .other
        }
    }

    /// `te` may only say `trailers` (§8.2.2), in any case.
    static func isTrailersOnly(_ value: UnsafeRawBufferPointer) -> Bool {
        let trailers: StaticString = "trailers"
        guard value.count == trailers.utf8CodeUnitCount else { return false }
        for i in 0..<value.count where value[i] | 0x20 != trailers.utf8Start[i] { return false }
        return true
    }

    /// A content-length: digits only, at least one, within Int64 (a list, a sign or
    /// whitespace make the request malformed).
    static func contentLength(_ value: UnsafeRawBufferPointer) -> Int64? {
        guard !value.isEmpty else { return nil }
        var n: Int64 = 0
        for c in value {
            let digit = c &- 0x30
            guard digit < 10 else { return nil }
            let (times, overflowTimes) = n.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int64(digit))
            guard !overflowTimes, !overflowSum else { return nil }
            n = sum
        }
        return n
    }

    /// A trailer field (a HEADERS frame after the body): the same name and value rules, no
    /// pseudo-header, nothing connection-specific. Fields a trailer section may not carry
    /// (framing, Host, credentials…) are dropped later, as from an HTTP/1.1 chunked body's
    /// trailers (`TrailerFields`), so both protocols forward the same section.
    static func isValidTrailer(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard isValidName(name), isValidValue(value) else { return false }
        switch kind(of: name) {
        case .connectionSpecific: return false
        case .te: return isTrailersOnly(value)
        case .other, .host, .cookie, .contentLength: return true
        }
    }

    static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}

#if canImport(Glibc)
    import Glibc
#endif
