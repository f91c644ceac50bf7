import SidecarHTTP

/// Turns one HTTP/2 request's field list into the `HTTPRequestHead` every exchange consumes,
/// through `RequestHeadBuilder`: the same typed head, checked by the same field rules, as a
/// request parsed from a socket, with no HTTP/1.1 text in between.
///
/// Each field is held here to RFC 9113 §8.2–§8.3 (`H2FieldRules`: lowercase token names, no
/// connection-specific fields, `te` only `trailers`, one numeric content-length, every
/// pseudo-header once, non-empty and before the regular fields, values without control bytes
/// or surrounding whitespace — a request that breaks one is malformed, a stream error); the
/// same reading covers HTTP/1.1's grammar, so the builder does not read the fields again.
/// What belongs to HTTP/2 itself:
/// - `:authority` becomes the `host` field, first of the fields; a `host` field that differs
///   from it makes the request malformed (RFC 9113 §8.3.1: the two must agree);
/// - `cookie` crumbs are joined with "; " into one field, after the others (RFC 9113 §8.2.3);
/// - a request body without `content-length` is framed as chunked for the exchange, which is
///   how it learns where the body ends;
/// - `te: trailers` is dropped: it concerns this hop only.
public struct H2RequestHead {
    public enum Failure: Error, Equatable {
        /// Not a request the sidecar takes (a missing or odd pseudo-header, CONNECT, a `host`
        /// that contradicts `:authority`): a stream error.
        case malformed
        /// The decoded field list passed `maxBytes`.
        case tooLarge
    }

    /// A finished head: the request, or the HTTP error a parser of the same request would
    /// have answered with (the exchange answers it, as for a refused HTTP/1.1 head).
    public enum Outcome {
        case request(HTTPRequestHead)
        case refused(HTTPHeadError)
    }

    /// The pseudo-header values, then the cookie crumbs joined, as they arrive (pseudo-header
    /// fields come before any other, §8.3); each part is a (start, count) in it.
    private let parts = HeadScratch(capacity: 256)
    private var method = (0, 0)
    private var path = (0, 0)
    private var authority = (0, 0)
    private var cookie = (0, 0)
    private var sawHost = false
    private var sawScheme = false
    /// The pseudo-header fields seen so far (`Pseudo`'s bits): each may come once.
    private var pseudoSeen: UInt8 = 0
    /// The request's content-length, when it has one: its DATA frames must add up to it.
    public private(set) var contentLength: Int64?
    private var failure: Failure?
    /// Begun once the pseudo-header fields are all in (they come first): at the first regular
    /// field, or at the end of a list without any.
    private var builder: RequestHeadBuilder?
    private var arrays = HeadArrays()
    /// Where the builder lays out each head's bytes (one per session: heads never interleave).
    private let scratch = HeadScratch()
    /// Decoded bytes so far, counted as SETTINGS_MAX_HEADER_LIST_SIZE counts them (name,
    /// value and 32 octets a field, RFC 9113 §6.5.2).
    public private(set) var listBytes = 0
    private let maxBytes: Int
    private let maxFields: Int

    public init(maxBytes: Int, maxFields: Int = HTTPHeadLimits.default.maxFields) {
        self.maxBytes = maxBytes
        self.maxFields = maxFields
    }

    /// Ready for the next request, keeping the buffers' capacity: a session receives one head
    /// at a time (RFC 9113 §4.3: a header block is never interleaved with another frame), so
    /// one builder serves all its streams; `arrays` (an earlier head's) hold the new head.
    public mutating func reset(reusing arrays: inout HeadArrays) {
        parts.removeAll()
        (method, path, authority, cookie) = ((0, 0), (0, 0), (0, 0), (0, 0))
        sawHost = false
        sawScheme = false
        pseudoSeen = 0
        contentLength = nil
        failure = nil
        listBytes = 0
        builder = nil
        swap(&self.arrays, &arrays)
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
            // Pseudo-header fields come first (§8.3): one after a regular field is malformed.
            if builder != nil || !addPseudo(name, value) { failure = .malformed }
            return true
        }
        guard H2FieldRules.isValidName(name), H2FieldRules.isValidValue(value) else {
            failure = .malformed
            return true
        }
        if builder == nil { begin() }
        switch H2FieldRules.kind(of: name) {
        case .other:
            break
        case .host:
            if sawHost || value.isEmpty {
                failure = .malformed
            } else if authority.1 == 0 {
                builder?.addChecked(name: name, value: value)
            } else if !Self.sameHost(value, part(authority)) {
                failure = .malformed
            }
            sawHost = true
            return true
        case .cookie:
            // The crumbs are the last bytes of `parts`: joined where they are.
            if cookie.1 == 0 {
                cookie.0 = parts.count
            } else {
                parts.append(UnsafeRawBufferPointer(start: Self.cookieSeparator.utf8Start, count: 2))
            }
            parts.append(value)
            cookie.1 = parts.count - cookie.0
            return true
        case .te:
            if !H2FieldRules.isTrailersOnly(value) { failure = .malformed }
            return true
        case .contentLength:
            guard contentLength == nil, let length = H2FieldRules.contentLength(value) else {
                failure = .malformed
                return true
            }
            contentLength = length
        case .connectionSpecific:
            failure = .malformed
            return true
        }
        builder?.addChecked(name: name, value: value)
        return true
    }

    /// The head's start from the pseudo-header fields, and `:authority` as its `host` field.
    private mutating func begin() {
        var spare = HeadArrays()
        swap(&spare, &arrays)
        var begun = RequestHeadBuilder(
            method: part(method), target: part(path), maxFields: maxFields, scratch: scratch, reusing: &spare)
        if authority.1 > 0 {
            Self.hostName.withUTF8Buffer { begun.addChecked(name: UnsafeRawBufferPointer($0), value: part(authority)) }
        }
        builder = begun
    }

    private static let hostName: StaticString = "host"

    private enum Pseudo {
        static let method: UInt8 = 1
        static let path: UInt8 = 2
        static let authority: UInt8 = 4
        static let scheme: UInt8 = 8
    }

    /// False when the field makes the request malformed: an unknown or repeated pseudo-header,
    /// an empty value, or a value outside the field grammar.
    private mutating func addPseudo(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool {
        let bit: UInt8
        if Self.equals(name, ":method") {
            bit = Pseudo.method
        } else if Self.equals(name, ":path") {
            bit = Pseudo.path
        } else if Self.equals(name, ":authority") {
            bit = Pseudo.authority
        } else if Self.equals(name, ":scheme") {
            bit = Pseudo.scheme
        } else {
            return false
        }
        guard pseudoSeen & bit == 0, !value.isEmpty, H2FieldRules.isValidValue(value) else { return false }
        pseudoSeen |= bit
        let at = (parts.count, value.count)
        switch bit {
        case Pseudo.method: method = at
        case Pseudo.path: path = at
        case Pseudo.authority: authority = at
        default:
            sawScheme = true
            return true
        }
        parts.append(value)
        return true
    }

    private func part(_ range: (Int, Int)) -> UnsafeRawBufferPointer { parts.bytes(range.0, range.1) }

    /// The request, once its header block is complete. `bodyFollows`: DATA frames follow.
    public mutating func finish(bodyFollows: Bool) throws(Failure) -> Outcome {
        if let failure { throw failure }
        guard sawScheme, method.1 > 0, path.1 > 0 else { throw .malformed }
        // A content-length its DATA frames cannot match (§8.1.1): none follow.
        if !bodyFollows, let contentLength, contentLength != 0 { throw .malformed }
        // CONNECT (and so the extended CONNECT of RFC 8441) is not offered.
        guard !Self.equals(part(method), "CONNECT") else { throw .malformed }
        // Origin form only: `*` (OPTIONS) has no path for the rules to judge.
        guard part(path).first == UInt8(ascii: "/") else { throw .malformed }
        if builder == nil { begin() }
        // Moved out, not copied: a copy's arrays would not be unique, and would be copied again.
        guard authority.1 > 0 || sawHost, var builder = self.builder.take() else { throw .malformed }
        if cookie.1 > 0 {
            Self.cookieName.withUTF8Buffer { builder.addChecked(name: UnsafeRawBufferPointer($0), value: part(cookie)) }
        }
        do throws(HTTPHeadError) {
            return .request(try builder.finish(bodyFollows: bodyFollows))
        } catch {
            return .refused(error)
        }
    }

    private static let cookieName: StaticString = "cookie"
    private static let cookieSeparator: StaticString = "; "

    static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount
            && memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }

    private static func sameHost(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c | 0x20 : c }
}

#if canImport(Glibc)
    import Glibc
#endif
