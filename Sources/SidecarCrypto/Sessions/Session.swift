/// A signed-in user's session, sealed into the session cookie or a bearer token.
/// Times are Unix seconds.
public struct Session: Sendable, Equatable {
    public static let formatVersion: UInt8 = 1
    public static let idByteCount = 16
    static let maximumSubjectBytes = 255
    static let maximumEmailBytes = 512
    static let maximumNameBytes = 1024
    static let maximumRefreshTokenBytes = 2048
    static let maximumClientIDBytes = 255

    /// Random; a new one for every login.
    public var id: [UInt8]
    public var subject: String
    public var email: String?
    public var emailVerified: Bool
    public var privateEmail: Bool
    public var name: String?
    public var issuedAt: Int64
    /// The milliseconds within `issuedAt`'s second (0 for sessions sealed before they were
    /// recorded): Apple's revocations are compared in milliseconds.
    public var issuedAtMillis: UInt16 = 0
    /// When the session was issued, in Unix milliseconds.
    public var issuedAtMs: Int64 { issuedAt &* 1000 &+ Int64(issuedAtMillis) }
    /// Absolute expiry.
    public var expiresAt: Int64
    public var idleDeadline: Int64
    public var lastRevalidation: Int64
    public var appleRefreshToken: String?
    /// The Apple client the session's tokens were issued to when it is not `apple.client_id`
    /// (a native app's bundle id): refresh and revoke must name it. nil for web sessions, so
    /// their cookies do not grow.
    public var appleClientID: String?
    /// What the id_token said at sign-in, forwarded with every request of the session; nil when
    /// it said nothing (older sessions too). See `SessionExtras`.
    public var extras = SessionExtras()

    public init(id: [UInt8], subject: String, email: String?, emailVerified: Bool, privateEmail: Bool,
                name: String?, issuedAt: Int64, expiresAt: Int64, idleDeadline: Int64,
                lastRevalidation: Int64, appleRefreshToken: String?, appleClientID: String? = nil,
                issuedAtMillis: UInt16 = 0) {
        self.issuedAtMillis = min(issuedAtMillis, 999)
        self.id = id
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
        self.privateEmail = privateEmail
        self.name = name
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.idleDeadline = idleDeadline
        self.lastRevalidation = lastRevalidation
        self.appleRefreshToken = appleRefreshToken
        self.appleClientID = appleClientID
    }

    /// A fresh random session id.
    public static func newID() throws(CryptoError) -> [UInt8] { try SecureRandom.bytes(idByteCount) }

    /// Whether the fields fit the codec's bounds (sealing a session that does not is an error).
    public var isEncodable: Bool {
        id.count == Self.idByteCount && !subject.isEmpty && subject.utf8.count <= Self.maximumSubjectBytes
            && (email?.utf8.count ?? 0) <= Self.maximumEmailBytes && (name?.utf8.count ?? 0) <= Self.maximumNameBytes
            && (appleRefreshToken?.utf8.count ?? 0) <= Self.maximumRefreshTokenBytes
            && (appleClientID.map { !$0.isEmpty && $0.utf8.count <= Self.maximumClientIDBytes } ?? true)
            && extras.isEncodable
    }
}

extension Session: SealedPayload {
    public static let purpose = "session"

    /// `version ‖ id(16) ‖ flags ‖ sub(u8 len) ‖ [email(u16)] ‖ [name(u16)] ‖ 4 × i64 ‖ [refresh(u16)]
    /// ‖ [client id(u8)] ‖ [issued-at milliseconds (u16 BE)] ‖ [extras]`. The client id, the
    /// milliseconds and the extras came later under flags of their own, so values sealed before
    /// them still open.
    /// Callers check `isEncodable` first; `PayloadSealer` users get that from `SessionSealer.seal`.
    public func encode(into writer: inout ByteWriter) {
        writer.write(Self.formatVersion)
        writer.write(raw: id)
        var flags: UInt8 = 0
        if emailVerified { flags |= SessionFlag.emailVerified }
        if privateEmail { flags |= SessionFlag.privateEmail }
        if email != nil { flags |= SessionFlag.email }
        if name != nil { flags |= SessionFlag.name }
        if appleRefreshToken != nil { flags |= SessionFlag.refreshToken }
        if appleClientID != nil { flags |= SessionFlag.clientID }
        if issuedAtMillis != 0 { flags |= SessionFlag.issuedAtMillis }
        if !extras.isEmpty { flags |= SessionFlag.extras }
        writer.write(flags)
        writer.write(subject, wide: false)
        if let email { writer.write(email, wide: true) }
        if let name { writer.write(name, wide: true) }
        for time in [issuedAt, expiresAt, idleDeadline, lastRevalidation] { writer.write(time) }
        if let appleRefreshToken { writer.write(appleRefreshToken, wide: true) }
        if let appleClientID { writer.write(appleClientID, wide: false) }
        if issuedAtMillis != 0 {
            writer.write(UInt8(issuedAtMillis >> 8))
            writer.write(UInt8(issuedAtMillis & 0xff))
        }
        if !extras.isEmpty { extras.encode(into: &writer) }
    }

    public init(from reader: inout ByteReader) throws(SealedOpenError) {
        self.init(try SessionFields(reading: &reader))
    }

    public func validate(now: Int64) throws(SealedOpenError) {
        guard now < expiresAt else { throw .expired }
        guard now < idleDeadline else { throw .idleExpired }
    }
}

extension PayloadSealer where Payload == Session {
    /// Seals a session after checking it fits the codec's bounds.
    public func sealSession(_ session: Session, cookieName: String) throws(CryptoError) -> String {
        guard session.isEncodable else { throw .invalidArgument("session field out of bounds") }
        return try seal(session, context: cookieName)
    }
}
