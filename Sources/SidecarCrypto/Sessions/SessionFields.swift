/// A session payload read in place (the codec of `Session.encode`): the scalars decoded, the
/// strings as byte ranges of the payload, checked exactly as `Session(from:)` checks them
/// (bounds, flags, valid UTF-8, a non-empty subject and client id, milliseconds below 1000).
///
/// The request path opens every session its cache does not hold: reading the payload this
/// way costs no allocation, where decoding a `Session` makes an array and up to five strings
/// that the cache would later free as cold memory. `Session(fields)` builds the value when a
/// rare path needs it (re-sealing, revalidation, the session endpoints).
public struct SessionFields {
    /// The payload the ranges index into; borrowed, valid as long as the caller says.
    public let payload: UnsafeBufferPointer<UInt8>
    public let id: Range<Int>
    public let subject: Range<Int>
    public let email: Range<Int>?
    public let name: Range<Int>?
    public let appleRefreshToken: Range<Int>?
    public let appleClientID: Range<Int>?
    public let emailVerified: Bool
    public let privateEmail: Bool
    public let issuedAt: Int64
    public let issuedAtMillis: UInt16
    public let expiresAt: Int64
    public let idleDeadline: Int64
    public let lastRevalidation: Int64
    public let extras: SessionExtras.Fields

    public var issuedAtMs: Int64 { issuedAt &* 1000 &+ Int64(issuedAtMillis) }

    /// Reads a whole payload; throws `.invalidPayload` (or `.unsupportedVersion`) on anything
    /// `Session(from:)` refuses, and on trailing bytes.
    public init(parsing payload: UnsafeBufferPointer<UInt8>) throws(SealedOpenError) {
        var reader = ByteReader(payload)
        try self.init(reading: &reader)
        guard reader.isAtEnd else { throw .invalidPayload }
    }

    init(reading reader: inout ByteReader) throws(SealedOpenError) {
        payload = reader.buffer
        guard try reader.readByte() == Session.formatVersion else { throw .unsupportedVersion }
        id = try reader.readRange(Session.idByteCount)
        let flags = try reader.readByte()
        guard flags & ~SessionFlag.all == 0 else { throw .invalidPayload }
        emailVerified = flags & SessionFlag.emailVerified != 0
        privateEmail = flags & SessionFlag.privateEmail != 0
        subject = try reader.readStringRange(wide: false, maximumByteCount: Session.maximumSubjectBytes)
        guard !subject.isEmpty else { throw .invalidPayload }
        email = flags & SessionFlag.email != 0
            ? try reader.readStringRange(wide: true, maximumByteCount: Session.maximumEmailBytes) : nil
        name = flags & SessionFlag.name != 0
            ? try reader.readStringRange(wide: true, maximumByteCount: Session.maximumNameBytes) : nil
        issuedAt = try reader.readInt64()
        expiresAt = try reader.readInt64()
        idleDeadline = try reader.readInt64()
        lastRevalidation = try reader.readInt64()
        appleRefreshToken = flags & SessionFlag.refreshToken != 0
            ? try reader.readStringRange(wide: true, maximumByteCount: Session.maximumRefreshTokenBytes) : nil
        appleClientID = flags & SessionFlag.clientID != 0
            ? try reader.readStringRange(wide: false, maximumByteCount: Session.maximumClientIDBytes) : nil
        guard appleClientID?.isEmpty != true else { throw .invalidPayload }
        if flags & SessionFlag.issuedAtMillis != 0 {
            let millis = UInt16(try reader.readByte()) << 8 | UInt16(try reader.readByte())
            guard millis > 0, millis < 1000 else { throw .invalidPayload }
            issuedAtMillis = millis
        } else {
            issuedAtMillis = 0
        }
        extras = flags & SessionFlag.extras != 0 ? try SessionExtras.Fields(reading: &reader) : SessionExtras.Fields()
    }

    /// The bytes of one of the ranges.
    @inline(__always)
    public subscript(range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: payload[range])
    }

    public func validate(now: Int64) throws(SealedOpenError) {
        guard now < expiresAt else { throw .expired }
        guard now < idleDeadline else { throw .idleExpired }
    }

    func string(_ range: Range<Int>) -> String { String(decoding: self[range], as: UTF8.self) }
}

/// The flags byte of the session codec.
enum SessionFlag {
    static let emailVerified: UInt8 = 1 << 0
    static let privateEmail: UInt8 = 1 << 1
    static let email: UInt8 = 1 << 2
    static let name: UInt8 = 1 << 3
    static let refreshToken: UInt8 = 1 << 4
    static let clientID: UInt8 = 1 << 5
    static let issuedAtMillis: UInt8 = 1 << 6
    static let extras: UInt8 = 1 << 7
    static let all: UInt8 = 0xff
}

extension Session {
    /// The session `fields` were read from (their strings were checked to be valid UTF-8).
    public init(_ fields: SessionFields) {
        self.init(
            id: Array(fields[fields.id]), subject: fields.string(fields.subject), email: fields.email.map(fields.string),
            emailVerified: fields.emailVerified, privateEmail: fields.privateEmail, name: fields.name.map(fields.string),
            issuedAt: fields.issuedAt, expiresAt: fields.expiresAt, idleDeadline: fields.idleDeadline,
            lastRevalidation: fields.lastRevalidation, appleRefreshToken: fields.appleRefreshToken.map(fields.string),
            appleClientID: fields.appleClientID.map(fields.string), issuedAtMillis: fields.issuedAtMillis)
        extras = SessionExtras(fields.extras, fields)
    }

    /// The encoded payload (`encode(into:)`), for reading it back as `SessionFields`.
    public var encoded: [UInt8] {
        var writer = ByteWriter()
        encode(into: &writer)
        return writer.bytes
    }
}
