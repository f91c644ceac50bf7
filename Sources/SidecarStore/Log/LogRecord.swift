/// One change in the store log.
///
/// Framing on disk: `length: u32 LE ‖ crc32: u32 LE ‖ body`, where `length` counts the body
/// and the CRC covers the length bytes and the body (a bit flip in the length is caught
/// too). The body is `type: u8 ‖ fields`, integers little-endian, fixed layouts:
///
/// | type | record           | fields                                                                  |
/// |------|------------------|-------------------------------------------------------------------------|
/// | 1    | revoke session   | id 16 ‖ expiresAt i64                                                   |
/// | 2    | revoke subject   | cutoffMs i64 ‖ keepUntil i64 ‖ subject length u16 ‖ subject UTF-8       |
/// | 3    | claim            | namespace u8 ‖ key 16 ‖ expiresAt i64                                   |
/// | 4    | enqueue forward  | id u64 ‖ enqueuedAt i64 ‖ attempts u32 ‖ lastAttemptAt i64 (min = none) ‖ payload length u32 ‖ payload |
/// | 5    | ack forward      | id u64                                                                  |
/// | 6    | forward attempt  | id u64 ‖ at i64                                                         |
/// | 7    | forward sequence | next id u64 (written by compaction: ids are never reused)               |
/// | 8    | sign-in          | atMs i64 ‖ subject length u16 ‖ subject ‖ platform length u8 ‖ platform  |
/// | 9    | kept refresh token | atMs i64 ‖ subject length u16 ‖ subject ‖ sealed length u16 ‖ sealed  |
/// | 10   | forget refresh token | subject length u16 ‖ subject                                        |
///
/// A claim whose namespace has the high bit set (`ClaimNamespace.horizon`) is not a key but
/// the horizon of namespace `n & 0x7F`: its keys expiring no later than `expiresAt` were
/// forgotten to make room and stay refused. Older sidecars keep it as an unknown key.
enum LogRecord: Equatable {
    case revokeSession(Key128, expiresAt: Int64)
    case revokeSubject(String, SubjectRevocation)
    case claim(ClaimKey, expiresAt: Int64)
    case enqueueForward(PendingForward)
    case ackForward(ForwardID)
    case forwardAttempt(ForwardID, at: Int64)
    case forwardSequence(next: UInt64)
    case signIn(String, SignInRecord)
    case keepRefreshToken(String, KeptRefreshToken)
    case forgetRefreshToken(String)

    static let frameHeaderBytes = 8
    static let maximumSubjectBytes = 1024
    /// A forward payload's bound in the format (the configured limit may only be lower).
    static let maximumPayloadBytes = 1 << 20
    /// The largest body any record can have: an enqueue with the largest payload.
    static let maximumBodyBytes = 33 + maximumPayloadBytes
    /// The largest framed record: also the most one torn append can leave behind.
    static let maximumFramedBytes = frameHeaderBytes + maximumBodyBytes

    private enum Kind: UInt8 {
        case revokeSession = 1, revokeSubject, claim, enqueueForward, ackForward, forwardAttempt, forwardSequence, signIn,
             keepRefreshToken, forgetRefreshToken
    }

    /// The record framed for appending.
    func framed() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.frameHeaderBytes + bodyByteCount)
        out.append(contentsOf: [0, 0, 0, 0, 0, 0, 0, 0])
        encodeBody(into: &out)
        let length = UInt32(out.count - Self.frameHeaderBytes)
        withUnsafeBytes(of: length.littleEndian) { out.replaceSubrange(0..<4, with: $0) }
        let crc = out.withUnsafeBytes { bytes in
            let lengthCRC = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<4]))
            return CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[8...]), continuing: lengthCRC)
        }
        withUnsafeBytes(of: crc.littleEndian) { out.replaceSubrange(4..<8, with: $0) }
        return out
    }

    /// The size `framed()` has, without encoding (compaction estimates the live log with it).
    var framedByteCount: Int { Self.frameHeaderBytes + bodyByteCount }

    private var bodyByteCount: Int {
        switch self {
        case .revokeSession: return 25
        case .revokeSubject(let subject, _): return 19 + subject.utf8.count
        case .claim: return 26
        case .enqueueForward(let forward): return 33 + forward.payload.count
        case .ackForward, .forwardSequence: return 9
        case .forwardAttempt: return 17
        case .signIn(let subject, let signIn): return 12 + subject.utf8.count + signIn.platform.utf8.count
        case .keepRefreshToken(let subject, let token): return 13 + subject.utf8.count + token.sealed.utf8.count
        case .forgetRefreshToken(let subject): return 3 + subject.utf8.count
        }
    }

    private func encodeBody(into out: inout [UInt8]) {
        func put<I: FixedWidthInteger>(_ value: I) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        switch self {
        case .revokeSession(let id, let expiresAt):
            put(Kind.revokeSession.rawValue)
            out.append(contentsOf: id.bytes)
            put(expiresAt)
        case .revokeSubject(let subject, let revocation):
            put(Kind.revokeSubject.rawValue)
            put(revocation.cutoffMs)
            put(revocation.keepUntil)
            put(UInt16(subject.utf8.count))
            out.append(contentsOf: subject.utf8)
        case .claim(let key, let expiresAt):
            put(Kind.claim.rawValue)
            put(key.namespace.rawValue)
            out.append(contentsOf: key.key.bytes)
            put(expiresAt)
        case .enqueueForward(let forward):
            put(Kind.enqueueForward.rawValue)
            put(forward.id.rawValue)
            put(forward.enqueuedAt)
            put(forward.attempts)
            put(forward.lastAttemptAt ?? .min)
            put(UInt32(forward.payload.count))
            out.append(contentsOf: forward.payload)
        case .ackForward(let id):
            put(Kind.ackForward.rawValue)
            put(id.rawValue)
        case .forwardAttempt(let id, let time):
            put(Kind.forwardAttempt.rawValue)
            put(id.rawValue)
            put(time)
        case .forwardSequence(let next):
            put(Kind.forwardSequence.rawValue)
            put(next)
        case .signIn(let subject, let signIn):
            put(Kind.signIn.rawValue)
            put(signIn.atMs)
            put(UInt16(subject.utf8.count))
            out.append(contentsOf: subject.utf8)
            put(UInt8(signIn.platform.utf8.count))
            out.append(contentsOf: signIn.platform.utf8)
        case .keepRefreshToken(let subject, let token):
            put(Kind.keepRefreshToken.rawValue)
            put(token.atMs)
            put(UInt16(subject.utf8.count))
            out.append(contentsOf: subject.utf8)
            put(UInt16(token.sealed.utf8.count))
            out.append(contentsOf: token.sealed.utf8)
        case .forgetRefreshToken(let subject):
            put(Kind.forgetRefreshToken.rawValue)
            put(UInt16(subject.utf8.count))
            out.append(contentsOf: subject.utf8)
        }
    }

    /// The record in a body whose CRC matched; nil when its type or layout is unknown.
    static func decode(body: UnsafeRawBufferPointer) -> LogRecord? {
        var reader = LittleEndianReader(body)
        guard let kindByte: UInt8 = reader.read(), let kind = Kind(rawValue: kindByte) else { return nil }
        let record: LogRecord?
        switch kind {
        case .revokeSession:
            guard let id = reader.readKey(), let expiresAt: Int64 = reader.read() else { return nil }
            record = .revokeSession(id, expiresAt: expiresAt)
        case .revokeSubject:
            guard let cutoff: Int64 = reader.read(), let keepUntil: Int64 = reader.read(),
                  let length: UInt16 = reader.read(), let bytes = reader.readBytes(Int(length)),
                  let subject = String(validating: bytes, as: UTF8.self) else { return nil }
            record = .revokeSubject(subject, SubjectRevocation(cutoffMs: cutoff, keepUntil: keepUntil))
        case .claim:
            guard let namespace: UInt8 = reader.read(), let key = reader.readKey(), let expiresAt: Int64 = reader.read()
            else { return nil }
            record = .claim(ClaimKey(namespace: ClaimNamespace(rawValue: namespace), key: key), expiresAt: expiresAt)
        case .enqueueForward:
            guard let id: UInt64 = reader.read(), let enqueuedAt: Int64 = reader.read(),
                  let attempts: UInt32 = reader.read(), let lastAttempt: Int64 = reader.read(),
                  let length: UInt32 = reader.read(), let payload = reader.readBytes(Int(length)) else { return nil }
            record = .enqueueForward(PendingForward(
                id: ForwardID(rawValue: id), payload: payload, enqueuedAt: enqueuedAt, attempts: attempts,
                lastAttemptAt: lastAttempt == .min ? nil : lastAttempt))
        case .ackForward:
            guard let id: UInt64 = reader.read() else { return nil }
            record = .ackForward(ForwardID(rawValue: id))
        case .forwardAttempt:
            guard let id: UInt64 = reader.read(), let time: Int64 = reader.read() else { return nil }
            record = .forwardAttempt(ForwardID(rawValue: id), at: time)
        case .forwardSequence:
            guard let next: UInt64 = reader.read() else { return nil }
            record = .forwardSequence(next: next)
        case .signIn:
            guard let atMs: Int64 = reader.read(), let length: UInt16 = reader.read(),
                  let bytes = reader.readBytes(Int(length)), let subject = String(validating: bytes, as: UTF8.self),
                  let platformLength: UInt8 = reader.read(), let platformBytes = reader.readBytes(Int(platformLength)),
                  let platform = String(validating: platformBytes, as: UTF8.self) else { return nil }
            record = .signIn(subject, SignInRecord(atMs: atMs, platform: platform))
        case .keepRefreshToken:
            guard let atMs: Int64 = reader.read(), let length: UInt16 = reader.read(),
                  let bytes = reader.readBytes(Int(length)), let subject = String(validating: bytes, as: UTF8.self),
                  let sealedLength: UInt16 = reader.read(), let sealedBytes = reader.readBytes(Int(sealedLength)),
                  let sealed = String(validating: sealedBytes, as: UTF8.self) else { return nil }
            record = .keepRefreshToken(subject, KeptRefreshToken(atMs: atMs, sealed: sealed))
        case .forgetRefreshToken:
            guard let length: UInt16 = reader.read(), let bytes = reader.readBytes(Int(length)),
                  let subject = String(validating: bytes, as: UTF8.self) else { return nil }
            record = .forgetRefreshToken(subject)
        }
        return reader.isAtEnd ? record : nil
    }
}

/// Reads little-endian fields from a record body; nil past its end.
private struct LittleEndianReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func read<I: FixedWidthInteger>() -> I? {
        let size = MemoryLayout<I>.size
        guard bytes.count - offset >= size else { return nil }
        defer { offset += size }
        return I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }

    mutating func readBytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func readKey() -> Key128? {
        guard bytes.count - offset >= Key128.byteCount else { return nil }
        defer { offset += Key128.byteCount }
        return Key128(exactly: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Key128.byteCount]))
    }
}
