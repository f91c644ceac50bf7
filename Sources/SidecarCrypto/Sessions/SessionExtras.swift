/// What a session keeps beyond the identity, for the upstream: the id_token's `transfer_sub`
/// (an app moved between teams), the app's previous user id for the new `sub` (from
/// `apple.transfer.mapping_file`), `real_user_status` (native first sign-in only) and
/// `auth_time`. Sealed after the session's other fields under their own flags byte, present
/// only when one of them is, so a session without them seals as before.
public struct SessionExtras: Sendable, Equatable {
    public var transferSubject: String?
    public var previousUserID: String?
    /// 0 unsupported, 1 unknown, 2 likely real.
    public var realUserStatus: UInt8?
    /// When the user authenticated with Apple (Unix seconds).
    public var authTime: Int64?

    static let maximumIdentifierBytes = 255

    public init(transferSubject: String? = nil, previousUserID: String? = nil, realUserStatus: UInt8? = nil,
                authTime: Int64? = nil) {
        self.transferSubject = transferSubject
        self.previousUserID = previousUserID
        self.realUserStatus = realUserStatus
        self.authTime = authTime
    }

    public var isEmpty: Bool { transferSubject == nil && previousUserID == nil && realUserStatus == nil && authTime == nil }

    var isEncodable: Bool {
        (transferSubject.map { !$0.isEmpty && $0.utf8.count <= Self.maximumIdentifierBytes } ?? true)
            && (previousUserID.map { !$0.isEmpty && $0.utf8.count <= Self.maximumIdentifierBytes } ?? true)
            && (realUserStatus.map { $0 <= 2 } ?? true)
    }

    private enum Flag {
        static let transferSubject: UInt8 = 1 << 0
        static let previousUserID: UInt8 = 1 << 1
        static let realUserStatus: UInt8 = 1 << 2
        static let authTime: UInt8 = 1 << 3
        static let all: UInt8 = 0x0f
    }

    /// `flags ‖ [transfer_sub(u8 len)] ‖ [previous id(u8 len)] ‖ [real_user_status u8] ‖ [auth_time i64]`.
    func encode(into writer: inout ByteWriter) {
        var flags: UInt8 = 0
        if transferSubject != nil { flags |= Flag.transferSubject }
        if previousUserID != nil { flags |= Flag.previousUserID }
        if realUserStatus != nil { flags |= Flag.realUserStatus }
        if authTime != nil { flags |= Flag.authTime }
        writer.write(flags)
        if let transferSubject { writer.write(transferSubject, wide: false) }
        if let previousUserID { writer.write(previousUserID, wide: false) }
        if let realUserStatus { writer.write(realUserStatus) }
        if let authTime { writer.write(authTime) }
    }

    /// The extras read in place, as `SessionFields` reads the rest.
    public struct Fields: Sendable {
        public let transferSubject: Range<Int>?
        public let previousUserID: Range<Int>?
        public let realUserStatus: UInt8?
        public let authTime: Int64?

        init() {
            transferSubject = nil
            previousUserID = nil
            realUserStatus = nil
            authTime = nil
        }

        init(reading reader: inout ByteReader) throws(SealedOpenError) {
            let flags = try reader.readByte()
            guard flags != 0, flags & ~Flag.all == 0 else { throw .invalidPayload }
            transferSubject = flags & Flag.transferSubject != 0
                ? try reader.readStringRange(wide: false, maximumByteCount: SessionExtras.maximumIdentifierBytes) : nil
            previousUserID = flags & Flag.previousUserID != 0
                ? try reader.readStringRange(wide: false, maximumByteCount: SessionExtras.maximumIdentifierBytes) : nil
            guard transferSubject?.isEmpty != true, previousUserID?.isEmpty != true else { throw .invalidPayload }
            if flags & Flag.realUserStatus != 0 {
                let status = try reader.readByte()
                guard status <= 2 else { throw .invalidPayload }
                realUserStatus = status
            } else {
                realUserStatus = nil
            }
            authTime = flags & Flag.authTime != 0 ? try reader.readInt64() : nil
        }
    }

    init(_ fields: Fields, _ session: SessionFields) {
        self.init(transferSubject: fields.transferSubject.map(session.string),
                  previousUserID: fields.previousUserID.map(session.string), realUserStatus: fields.realUserStatus,
                  authTime: fields.authTime)
    }
}
