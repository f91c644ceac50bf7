/// Turns one HTTP/2 request's field list into an HTTP/1.1 request head, so that every stream
/// goes through the same strict HTTP/1.1 parser, normalizer and trust rules as a request read
/// from a socket: the two protocols cannot drift apart on what the sidecar accepts.
///
/// libnghttp2 has already checked the list against RFC 9113 §8.1.1–§8.3 (lowercase names,
/// no connection-specific fields, `te` only `trailers`, every pseudo-header once, before the
/// regular fields, values without CR, LF, NUL or surrounding whitespace); what is left here is
/// the translation and the rules that belong to it:
/// - `:authority` becomes `Host`; a `host` field that differs from it makes the request
///   malformed (RFC 9113 §8.3.1: the two must agree);
/// - `cookie` crumbs are joined with "; " into one field (RFC 9113 §8.2.3);
/// - a request body without `content-length` is framed as chunked, so the HTTP/1.1 side
///   knows where it ends;
/// - the head asks for nothing about the connection (HTTP/1.1 keeps it alive): the HTTP/1.1
///   side, once it has answered a stream in full, may serve a later stream of the same
///   connection (`HTTP2Connection` hands it the next head only then, with its input empty).
public struct H2RequestHead {
    public enum Failure: Error, Equatable {
        /// Not a request the sidecar takes (a missing or odd pseudo-header, CONNECT, a `host`
        /// that contradicts `:authority`): a stream error.
        case malformed
        /// The decoded field list passed `maxBytes`.
        case tooLarge
    }

    private var method: [UInt8] = []
    private var path: [UInt8] = []
    private var authority: [UInt8] = []
    private var host: [UInt8]?
    private var cookie: [UInt8] = []
    private var fields: [UInt8] = []
    private var hasContentLength = false
    private var sawScheme = false
    private var failure: Failure?
    /// Decoded bytes so far, counted as SETTINGS_MAX_HEADER_LIST_SIZE counts them (name,
    /// value and 32 octets a field, RFC 9113 §6.5.2).
    public private(set) var listBytes = 0
    private let maxBytes: Int

    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
        fields.reserveCapacity(512)
        translated.reserveCapacity(1024)
    }

    /// Ready for the next request, keeping the buffers' capacity: a session receives one head
    /// at a time (RFC 9113 §4.3: a header block is never interleaved with another frame), so
    /// one builder serves all its streams without allocating per request.
    public mutating func reset() {
        method.removeAll(keepingCapacity: true)
        path.removeAll(keepingCapacity: true)
        authority.removeAll(keepingCapacity: true)
        host = nil
        cookie.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        hasContentLength = false
        sawScheme = false
        failure = nil
        listBytes = 0
    }

    /// Takes one decoded field. Returns false once the list is over its bound.
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        listBytes += name.count + value.count + 32
        guard listBytes <= maxBytes else {
            failure = .tooLarge
            return false
        }
        guard failure == nil else { return true }
        if name.first == UInt8(ascii: ":") {
            addPseudo(name, value)
            return true
        }
        if Self.equals(name, "host") {
            if host != nil { failure = .malformed }
            host = Array(value)
            return true
        }
        if Self.equals(name, "cookie") {
            if !cookie.isEmpty { cookie.appendText("; ") }
            cookie.append(contentsOf: value)
            return true
        }
        if Self.equals(name, "content-length") { hasContentLength = true }
        // `te: trailers` means nothing to an HTTP/1.1 hop: the sidecar drops trailers.
        if Self.equals(name, "te") { return true }
        fields.append(contentsOf: name)
        fields.appendText(": ")
        fields.append(contentsOf: value)
        fields.appendText("\r\n")
        return true
    }

    private mutating func addPseudo(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        if Self.equals(name, ":method") {
            method.append(contentsOf: value)
        } else if Self.equals(name, ":path") {
            path.append(contentsOf: value)
        } else if Self.equals(name, ":authority") {
            authority.append(contentsOf: value)
        } else if Self.equals(name, ":scheme") {
            sawScheme = true
        } else {
            failure = .malformed
        }
    }

    /// Whether the request asked for chunked framing of its body (no `content-length`).
    public func bodyIsChunked(hasBody: Bool) -> Bool { hasBody && !hasContentLength }

    /// The head `translate` wrote last, its capacity kept from request to request.
    public private(set) var translated: [UInt8] = []

    /// Writes the HTTP/1.1 head into `translated`. A mutating call on the builder where it
    /// lies, so that the builder and its arrays are not copied per request (a non-mutating
    /// `write` into a buffer of the same owner was: seven retains and releases).
    public mutating func translate(hasBody: Bool) throws(Failure) {
        var out: [UInt8] = []
        swap(&out, &translated)
        defer { swap(&out, &translated) }
        try write(hasBody: hasBody, into: &out)
    }

    /// The HTTP/1.1 head. `hasBody`: DATA frames follow the HEADERS frame.
    public func http1Head(hasBody: Bool) throws(Failure) -> [UInt8] {
        var head: [UInt8] = []
        try write(hasBody: hasBody, into: &head)
        return head
    }

    /// The same, written into `head` (emptied first, its capacity kept).
    public func write(hasBody: Bool, into head: inout [UInt8]) throws(Failure) {
        if let failure { throw failure }
        guard sawScheme, !method.isEmpty, !path.isEmpty else { throw .malformed }
        // CONNECT (and so the extended CONNECT of RFC 8441) is not offered.
        guard !(method.count == 7 && method.elementsEqual("CONNECT".utf8)) else { throw .malformed }
        // Origin form only: `*` (OPTIONS) has no path for the rules to judge.
        guard path.first == UInt8(ascii: "/") else { throw .malformed }
        if let host, !authority.isEmpty, !Self.sameHost(host, authority) { throw .malformed }
        let hostValue = authority.isEmpty ? host ?? [] : authority
        guard !hostValue.isEmpty else { throw .malformed }
        head.removeAll(keepingCapacity: true)
        head.reserveCapacity(method.count + path.count + hostValue.count + fields.count + cookie.count + 80)
        head.append(contentsOf: method)
        head.append(UInt8(ascii: " "))
        head.append(contentsOf: path)
        head.appendText(" HTTP/1.1\r\nhost: ")
        head.append(contentsOf: hostValue)
        head.appendText("\r\n")
        head.append(contentsOf: fields)
        if !cookie.isEmpty {
            head.appendText("cookie: ")
            head.append(contentsOf: cookie)
            head.appendText("\r\n")
        }
        if bodyIsChunked(hasBody: hasBody) { head.appendText("transfer-encoding: chunked\r\n") }
        head.appendText("\r\n")
    }

    static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }

    private static func sameHost(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c | 0x20 : c }
}

#if canImport(Glibc)
    import Glibc
#endif

extension Array where Element == UInt8 {
    /// A literal's bytes in one copy (appending a `String`'s UTF-8 view goes through the
    /// string's storage, several times the cost for these short pieces).
    @inline(__always) fileprivate mutating func appendText(_ text: StaticString) {
        text.withUTF8Buffer { append(contentsOf: $0) }
    }
}
