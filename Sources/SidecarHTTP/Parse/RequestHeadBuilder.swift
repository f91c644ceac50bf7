import CByteScan

/// A request head assembled from the parts a binary codec decoded (HTTP/2's field list)
/// rather than parsed from text: the same `HTTPRequestHead` a socket's bytes give, held to the
/// same rules, so that what the sidecar decides and forwards cannot depend on the protocol.
///
/// Each field is checked as `FieldLines` checks a line (a token name; a value of field-vchar,
/// obs-text, SP and HTAB, its surrounding whitespace not part of it: a byte HTTP/2 lets
/// through that a strict HTTP/1.1 reader refuses is refused here too) and fed to the same
/// `FieldSemantics` (Host, Content-Length, Transfer-Encoding, Connection, Expect); the
/// target is split by the same `TargetParts`. The bytes are laid out as a parsed head's are
/// (a start line, then `name: value` CRLF per field, then CRLF), because the forwarding code
/// copies runs of kept fields whole (`ForwardedFields`); nothing reads them back as text.
public struct RequestHeadBuilder {
    /// Where the bytes are laid out until `finish` copies them into `storage` at once.
    private let scratch: HeadScratch
    private var storage: [UInt8]
    private var fields: [HTTPField]
    private var semantics = FieldSemantics()
    private let maxFields: Int
    private var failure: HTTPHeadError?

    /// Fills the arrays of an earlier head (`HeadArrays(of:)`) when they are free; `arrays` is
    /// left empty.
    private var methodRange = ByteRange(start: 0, end: 0)
    private var targetRange = ByteRange(start: 0, end: 0)

    /// Begins a head for `method` and `target` in `scratch` (emptied), to fill the arrays of an
    /// earlier head (`HeadArrays(of:)`) when they are free; `arrays` is left empty.
    public init(
        method: UnsafeRawBufferPointer, target: UnsafeRawBufferPointer, maxFields: Int, scratch: HeadScratch,
        reusing arrays: inout HeadArrays
    ) {
        // The storage keeps the earlier head's bytes until `finish` replaces them all at once.
        storage = []
        fields = []
        swap(&storage, &arrays.storage)
        swap(&fields, &arrays.fields)
        fields.removeAll(keepingCapacity: true)
        self.scratch = scratch
        self.maxFields = maxFields
        scratch.removeAll()
        scratch.append(method)
        methodRange = ByteRange(start: 0, end: method.count)
        scratch.append(UnsafeRawBufferPointer(start: Self.space.utf8Start, count: 1))
        scratch.append(target)
        targetRange = ByteRange(start: method.count + 1, end: scratch.count)
        scratch.append(UnsafeRawBufferPointer(start: Self.versionLine.utf8Start, count: Self.versionLine.utf8CodeUnitCount))
    }

    /// Takes one field; a field the HTTP/1.1 grammar refuses makes the head refused (`finish`
    /// throws the error a parser would have).
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        guard let nameBase = name.baseAddress, name.count > 0,
              sidecar_token_prefix(nameBase.assumingMemoryBound(to: UInt8.self), name.count) == name.count
        else {
            failure = .invalidFieldName
            return
        }
        var valueStart = 0
        var valueEnd = value.count
        while valueStart < valueEnd, ASCII.isOWS(value[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, ASCII.isOWS(value[valueEnd - 1]) { valueEnd -= 1 }
        let trimmed = UnsafeRawBufferPointer(rebasing: value[valueStart..<valueEnd])
        if let base = trimmed.baseAddress, trimmed.count > 0,
           sidecar_field_value_length(base.assumingMemoryBound(to: UInt8.self), trimmed.count) != trimmed.count {
            failure = .controlCharacter
            return
        }
        append(name: name, value: trimmed)
    }

    /// Takes one field its codec has already held to the grammar `add` checks (a token name,
    /// a value of field-vchar, obs-text, SP and HTAB with no whitespace at either end): HTTP/2's
    /// own rules are stricter, so its fields are checked once, by its codec.
    public mutating func addChecked(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        append(name: name, value: value)
    }

    private mutating func append(name: UnsafeRawBufferPointer, value trimmed: UnsafeRawBufferPointer) {
        guard fields.count < maxFields else {
            failure = .tooManyFields
            return
        }
        let nameStart = scratch.count
        scratch.append(name)
        scratch.append(ASCII.colon, ASCII.sp)
        let valueAt = scratch.count
        scratch.append(trimmed)
        let end = scratch.count
        scratch.append(ASCII.cr, ASCII.lf)
        fields.append(HTTPField(name: ByteRange(start: nameStart, end: valueAt - 2), value: ByteRange(start: valueAt, end: end)))
        do throws(HTTPHeadError) {
            try semantics.observe(scratch.bytes, nameStart: nameStart, nameEnd: valueAt - 2, valueStart: valueAt, valueEnd: end)
        } catch {
            failure = error
        }
    }

    /// The head. `bodyFollows`: the codec delivers a body of unknown length, framed as
    /// chunked for the exchange (a Content-Length field, when there is one, frames it instead).
    public mutating func finish(bodyFollows: Bool) throws(HTTPHeadError) -> HTTPRequestHead {
        if let failure { throw failure }
        if semantics.hostCount > 1 { throw .multipleHost }
        if semantics.hostCount == 0 { throw .missingHost }
        scratch.append(ASCII.cr, ASCII.lf)
        storage.replaceSubrange(0..<storage.count, with: scratch.bytes)
        let (methodStart, methodEnd) = (Int(methodRange.start), Int(methodRange.end))
        let (targetStart, targetEnd) = (Int(targetRange.start), Int(targetRange.end))
        let split = storage.withUnsafeBytes { buf -> Result<(HTTPMethod, TargetParts.Parts), HTTPHeadError> in
            Result { () throws(HTTPHeadError) in
                guard methodEnd > methodStart, targetEnd > targetStart else { throw .malformedRequestLine }
                for i in methodStart..<methodEnd where !ASCII.isTokenChar(buf[i]) { throw .malformedRequestLine }
                for i in targetStart..<targetEnd where !(buf[i] > 0x20 && buf[i] < 0x7F) { throw .invalidTarget }
                let method = HTTPMethod.classify(buf, methodStart, methodEnd)
                if method == .connect { throw .connectNotAllowed }
                return (method, try TargetParts.split(buf, targetStart, targetEnd, method: method))
            }
        }
        let (parsedMethod, parts) = try split.get()
        var framing = try semantics.explicitFraming(version: .http11) ?? .none
        if bodyFollows, semantics.contentLength == nil { framing = .chunked }
        let connection = ConnectionSemantics(
            keepAlive: true, upgrade: false, expectContinue: semantics.expectContinue,
            listsFieldNames: semantics.connectionListsOthers)
        var built: [UInt8] = []
        var index: [HTTPField] = []
        swap(&built, &storage)
        swap(&index, &fields)
        return HTTPRequestHead(
            storage: built, fields: index, method: parsedMethod,
            methodRange: methodRange, target: targetRange, targetForm: parts.form,
            path: parts.path, query: parts.query, authority: parts.authority,
            version: .http11, host: semantics.host, framing: framing, connection: connection)
    }

    private static let versionLine: StaticString = " HTTP/1.1\r\n"
    private static let space: StaticString = " "
}
