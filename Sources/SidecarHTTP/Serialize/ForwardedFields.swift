/// Which field lines of a parsed head a proxy passes on: everything except hop-by-hop fields
/// (Connection and the names it lists, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
/// Proxy-*) and the names `FieldForwarding` drops (case-insensitive, `_` ≡ `-`); Content-Length once,
/// in canonical form, and no `Content_Length`; Host even if Connection lists it; with
/// `keepUpgrade` (a validated upgrade) the Upgrade field too.
///
/// Kept lines leave as the byte spans they arrived in — one span per run of consecutive kept
/// lines — because the parser already proved each line `name ":" OWS value OWS CRLF` and the
/// lines contiguous up to the head's final CRLF. Only a non-canonical Content-Length
/// (`010`, `5, 5`) is rewritten.
enum ForwardedFields {
    /// What becomes of one field line.
    enum Verdict {
        case keep
        case drop
        /// Kept with its value rewritten to these digits (a non-canonical Content-Length).
        case canonicalLength(Range<Int>)
    }

    /// What becomes of `field`, given what was kept before it (the one place the rules live:
    /// both emitters below go through it).
    @inline(__always)
    static func verdict(
        _ field: HTTPField, _ buf: UnsafeRawBufferPointer, _ fields: UnsafeBufferPointer<HTTPField>,
        connection: ConnectionSemantics, names: HeaderNameSet, keepUpgrade: Bool,
        wroteContentLength: inout Bool, wroteUpgrade: inout Bool
    ) -> Verdict {
        let name = UnsafeRawBufferPointer(rebasing: buf[field.name.range])
        switch names.tag(of: name) {
        case 0:
            // Connection options other than keep-alive and upgrade name further fields to drop.
            if connection.listsFieldNames, isListedInConnection(name, fields: fields, buf: buf) { return .drop }
            return .keep
        case FieldForwarding.Role.contentLength.rawValue:
            // `Content_Length` folds to the same name but is not the framing field: dropped,
            // so that no upstream that reads `_` as `-` (CGI, WSGI) takes it for one.
            if wroteContentLength || name[7] != ASCII.dash { return .drop }
            wroteContentLength = true
            let digits = canonicalDigits(buf, field.value)
            return digits == field.value.range ? .keep : .canonicalLength(digits)
        case FieldForwarding.Role.upgrade.rawValue:
            if keepUpgrade { wroteUpgrade = true }
            return keepUpgrade ? .keep : .drop
        case FieldForwarding.Role.host.rawValue:
            return .keep  // `Connection: host` must not strip the upstream's Host
        default:
            return .drop  // hop-by-hop or dropped
        }
    }

    /// Calls `emit` with the spans to write, in order. Returns whether an Upgrade field was
    /// kept (the writer then adds `Connection: upgrade`). `buf` is the head's whole storage;
    /// `connection` what its parse found in `Connection`.
    @inline(__always)
    static func forEach(
        _ buf: UnsafeRawBufferPointer, _ fields: UnsafeBufferPointer<HTTPField>, connection: ConnectionSemantics,
        forwarding: FieldForwarding, keepUpgrade: Bool, _ emit: (UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        let names = forwarding.names
        var runStart = -1
        var wroteContentLength = false
        var wroteUpgrade = false
        for field in fields {
            let lineStart = Int(field.name.start)
            let verdict = verdict(
                field, buf, fields, connection: connection, names: names, keepUpgrade: keepUpgrade,
                wroteContentLength: &wroteContentLength, wroteUpgrade: &wroteUpgrade)
            if case .keep = verdict {
                if runStart < 0 { runStart = lineStart }
                continue
            }
            if runStart >= 0 {
                emit(UnsafeRawBufferPointer(rebasing: buf[runStart..<lineStart]))
                runStart = -1
            }
            if case .canonicalLength(let digits) = verdict {
                emit(UnsafeRawBufferPointer(staticString: "Content-Length: "))
                emit(UnsafeRawBufferPointer(rebasing: buf[digits]))
                emit(UnsafeRawBufferPointer(staticString: "\r\n"))
            }
        }
        if runStart >= 0 {
            emit(UnsafeRawBufferPointer(rebasing: buf[runStart..<(buf.count - 2)]))  // up to the final CRLF
        }
        return wroteUpgrade
    }

    /// The same fields one at a time, as name and value (for a codec that writes fields, not
    /// lines: HTTP/2). Content-Length's value is the canonical one.
    @inline(__always)
    static func forEachField(
        _ buf: UnsafeRawBufferPointer, _ fields: UnsafeBufferPointer<HTTPField>, connection: ConnectionSemantics,
        forwarding: FieldForwarding, _ emit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) {
        let names = forwarding.names
        var wroteContentLength = false
        var wroteUpgrade = false
        for field in fields {
            let verdict = verdict(
                field, buf, fields, connection: connection, names: names, keepUpgrade: false,
                wroteContentLength: &wroteContentLength, wroteUpgrade: &wroteUpgrade)
            switch verdict {
            case .keep:
                emit(UnsafeRawBufferPointer(rebasing: buf[field.name.range]), UnsafeRawBufferPointer(rebasing: buf[field.value.range]))
            case .canonicalLength(let digits):
                emit(UnsafeRawBufferPointer(rebasing: buf[field.name.range]), UnsafeRawBufferPointer(rebasing: buf[digits]))
            case .drop:
                break
            }
        }
    }

    /// The value's first run of digits without leading zeros (a reader must not be able to
    /// take `010` for octal); the parser proved all values of the field equal.
    private static func canonicalDigits(_ buf: UnsafeRawBufferPointer, _ value: ByteRange) -> Range<Int> {
        var p = Int(value.start)
        let end = Int(value.end)
        while p + 1 < end, buf[p] == 0x30, ASCII.isDigit(buf[p + 1]) { p += 1 }
        var e = p
        while e < end, ASCII.isDigit(buf[e]) { e += 1 }
        return p..<e
    }

    private static func isListedInConnection(
        _ name: UnsafeRawBufferPointer, fields: UnsafeBufferPointer<HTTPField>, buf: UnsafeRawBufferPointer
    ) -> Bool {
        for field in fields where ByteCompare.equalsLowercased(buf, field.name, "connection") {
            var listed = false
            Tokens.forEach(in: buf, Int(field.value.start), Int(field.value.end)) { s, e in
                guard e - s == name.count, !listed else { return }
                var i = 0
                while i < name.count, HeaderNameSet.fold(name[i]) == HeaderNameSet.fold(buf[s + i]) { i += 1 }
                listed = i == name.count
            }
            if listed { return true }
        }
        return false
    }
}

/// The names `ForwardedFields` treats apart — Content-Length, Upgrade, Host, the hop-by-hop
/// names and the names a proxy drops — in one table compiled once: a field line costs one
/// lookup, and none for most lines (no name of their length is in the table), rather than a
/// comparison per special name and a lookup in each of two sets.
public final class FieldForwarding: Sendable {
    enum Role: UInt8 {
        case dropped = 1, contentLength, upgrade, host
    }

    let names: HeaderNameSet

    /// `dropping`: names (a trailing `*` makes a prefix) not forwarded, besides the hop-by-hop
    /// ones. Content-Length and Upgrade are never taken from it: they are forwarded as
    /// `ForwardedFields` says (Content-Length canonical, Upgrade only for a validated upgrade).
    public init(dropping: some Sequence<String>) {
        // The first tag of a name counts: Content-Length and Upgrade before the drop lists,
        // which come before Host (a dropped Host is dropped).
        var tagged: [(String, UInt8)] = [("content-length", Role.contentLength.rawValue), ("upgrade", Role.upgrade.rawValue)]
        tagged += HeaderNameSet.hopByHopNames.map { ($0, Role.dropped.rawValue) }
        tagged += dropping.map { ($0, Role.dropped.rawValue) }
        tagged.append(("host", Role.host.rawValue))
        names = HeaderNameSet(tagged: tagged)
    }

    /// Drops the hop-by-hop fields only.
    public static let hopByHopOnly = FieldForwarding(dropping: [])
}

extension UnsafeRawBufferPointer {
    @inline(__always) init(staticString s: StaticString) {
        self.init(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }
}

extension HeadView {
    /// The fields a proxy forwards (`ForwardedFields`) of a head whose `Connection` says
    /// `connection`, one at a time, for a codec that writes fields rather than lines (HTTP/2).
    /// Upgrade is never among them: no protocol switch crosses such a codec.
    @inline(__always)
    public func forEachForwardedField(
        connection: ConnectionSemantics, forwarding: FieldForwarding,
        _ emit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) {
        ForwardedFields.forEachField(bytes, fields, connection: connection, forwarding: forwarding, emit)
    }
}
