import SidecarCrypto
import SidecarHTTP

/// A session the authenticator accepted, with what every request of it needs prepared once.
///
/// One allocation: the object's header (below) and, allocated at its tail, the sealed value it
/// was opened from (the cache key), the identity fields to forward (`IdentityHeaders.Layout`)
/// and the session's payload, back to back. What every request reads — the times, and the id
/// and subject for the revocation check and the access log — is decoded when it is opened; the
/// whole `Session` only when a rarer path asks for it (re-sealing, revalidation, an assertion,
/// the session endpoints). One block rather than one per part (the token, the session's id and
/// strings, the fields, or even a separate byte array): a miss allocates once, and an eviction
/// frees one block of cold memory.
final class OpenedSession: ManagedBuffer<OpenedSession.Header, UInt8> {
    struct Header {
        /// Where the token ends and the identity fields begin, where the payload begins, and
        /// where it ends (the block may be longer: the allocator rounds up).
        let tokenEnd: UInt32
        let fieldsEnd: UInt32
        let payloadEnd: UInt32
        /// The subject's and the session id's bytes, from the start of the block.
        let subjectStart: UInt32
        let subjectEnd: UInt32
        let idStart: UInt32
        let idEnd: UInt32
        let subjectIsBare: Bool
        let needsReseal: Bool
        let omission: IdentityHeaders.Omission
        let expiresAt: Int64
        let idleDeadline: Int64
        let lastRevalidation: Int64
        let issuedAtMs: Int64
        var nextRevalidation: Int64
        var assertionField: [UInt8] = []
        var assertionRenewAt: Int64 = .min
        var checkedRevocations: UInt64 = 0
        /// The sign-in realm (`SignInRealms`) whose context opened it: the cache serves it to
        /// requests of that realm only.
        var realm: UInt16 = 0
        var renewal: SessionRenewal?
        /// Boxed: a `Session` kept inline would add its 136 bytes to every cached entry, though
        /// only the rarer paths ever decode it.
        var decoded: DecodedSession?
    }

    /// The user id needs no escaping in an access line (`LogLineWriter.bare`), checked once.
    var subjectIsBare: Bool { header.subjectIsBare }
    var expiresAt: Int64 { header.expiresAt }
    var idleDeadline: Int64 { header.idleDeadline }
    var lastRevalidation: Int64 { header.lastRevalidation }
    var issuedAtMs: Int64 { header.issuedAtMs }
    /// Opened under an older secret: re-seal it with the first one.
    var needsReseal: Bool { header.needsReseal }
    /// What the identity fields had to leave out (logged per forwarded request).
    var omission: IdentityHeaders.Omission { header.omission }
    /// From when a request of this token looks at its revalidation (`session.revalidate`):
    /// `lastRevalidation + period`, moved on while a check runs or after one Apple could not
    /// answer; `.max` without a refresh token or with revalidation off. One compare per request.
    var nextRevalidation: Int64 {
        get { header.nextRevalidation }
        set { header.nextRevalidation = newValue }
    }
    /// With `assertion.enabled`: the whole `X-Auth-Assertion: <jwt>\r\n` field, appended after
    /// the identity fields, and when it is to be replaced by a fresh signature. One
    /// compare per request while it is fresh; empty when assertions are off.
    var assertionField: [UInt8] {
        get { header.assertionField }
        set { header.assertionField = newValue }
    }
    var assertionRenewAt: Int64 {
        get { header.assertionRenewAt }
        set { header.assertionRenewAt = newValue }
    }
    /// The revocation generation (`RevocationView.generation`) it was last checked at: a hit
    /// at a newer one checks it against the revocations again (one compare per request when
    /// nothing was revoked; a logout elsewhere does not empty the cache).
    var checkedRevocations: UInt64 {
        get { header.checkedRevocations }
        set { header.checkedRevocations = newValue }
    }
    var realm: Int {
        get { Int(header.realm) }
        set { header.realm = UInt16(truncatingIfNeeded: newValue) }
    }
    /// This token's re-sealed successor while clients still send this token: a client that
    /// ignores `Set-Cookie` (scripts, load generators) or requests already in flight get the
    /// same new cookie until it is due itself, rather than a new seal, a new cache entry and
    /// an eviction per request.
    var renewal: SessionRenewal? {
        get { header.renewal }
        set { header.renewal = newValue }
    }

    /// The whole session, decoded from the payload the first time it is asked for.
    var session: Session {
        if let decoded = header.decoded { return decoded.session }
        let made = withBytes(header.fieldsEnd, header.payloadEnd) { payload in
            // These bytes were read as `SessionFields` when the entry was made: they cannot fail now.
            guard let fields = try? SessionFields(parsing: payload.bindMemory(to: UInt8.self)) else {
                preconditionFailure("a cached session payload no longer parses")
            }
            return Session(fields)
        }
        header.decoded = DecodedSession(made)
        return made
    }

    /// An entry for `token`, whose payload `fields` was just opened from it. `revalidate`:
    /// `session.revalidate` in seconds, 0 when off. `scratch` is the caller's, reused from
    /// entry to entry (the percent-encoded name).
    static func opened(token: UnsafeBufferPointer<UInt8>, fields: SessionFields, needsReseal: Bool, names: IdentityHeaderNames,
                       revalidate: Int64 = 0, scratch: inout [UInt8]) -> OpenedSession {
        let layout = IdentityHeaders.Layout(fields, names: names, scratch: &scratch)
        let payload = fields.payload
        let fieldsEnd = token.count + layout.byteCount, total = fieldsEnd + payload.count
        // A token comes from one request head and its payload is bounded by the codec: far below.
        precondition(total < Int(UInt32.max), "a session entry beyond 32-bit offsets")
        let header = Header(
            tokenEnd: UInt32(token.count), fieldsEnd: UInt32(fieldsEnd), payloadEnd: UInt32(total),
            subjectStart: UInt32(fieldsEnd + fields.subject.lowerBound), subjectEnd: UInt32(fieldsEnd + fields.subject.upperBound),
            idStart: UInt32(fieldsEnd + fields.id.lowerBound), idEnd: UInt32(fieldsEnd + fields.id.upperBound),
            subjectIsBare: LogLineWriter.isBare(UnsafeRawBufferPointer(fields[fields.subject])), needsReseal: needsReseal, omission: layout.omission,
            expiresAt: fields.expiresAt, idleDeadline: fields.idleDeadline, lastRevalidation: fields.lastRevalidation,
            issuedAtMs: fields.issuedAtMs,
            nextRevalidation: revalidate > 0 && fields.appleRefreshToken != nil ? fields.lastRevalidation &+ revalidate : .max)
        let entry = unsafeDowncast(Self.create(minimumCapacity: total) { _ in header }, to: OpenedSession.self)
        entry.withUnsafeMutablePointerToElements { base in
            if let source = token.baseAddress { base.initialize(from: source, count: token.count) }
            layout.write(into: base + token.count, names: names, scratch: scratch)
            if let source = payload.baseAddress { (base + fieldsEnd).initialize(from: source, count: payload.count) }
        }
        return entry
    }

    /// An entry for a session sealed here (a re-sealed cookie, tests); nil if it does not fit
    /// the codec's bounds (sealing it would have failed).
    static func make(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames,
                     revalidate: Int64 = 0, scratch: inout [UInt8]) -> OpenedSession? {
        guard session.isEncodable else { return nil }
        return session.encoded.withUnsafeBufferPointer { payload in
            token.withUnsafeBufferPointer { token in
                guard let fields = try? SessionFields(parsing: payload) else { return nil }
                return opened(token: token, fields: fields, needsReseal: needsReseal, names: names,
                              revalidate: revalidate, scratch: &scratch)
            }
        }
    }

    static func make(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames,
                     revalidate: Int64 = 0) -> OpenedSession? {
        var scratch: [UInt8] = []
        return make(token: token, session: session, needsReseal: needsReseal, names: names, revalidate: revalidate,
                    scratch: &scratch)
    }

    /// Bytes `start..<end` of the block.
    @inline(__always)
    private func withBytes<Result>(_ start: UInt32, _ end: UInt32, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeMutablePointerToElements { body(UnsafeRawBufferPointer(start: $0 + Int(start), count: Int(end &- start))) }
    }

    /// The sealed value (cookie or bearer token) it was opened from.
    @inline(__always)
    func withToken<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withBytes(0, header.tokenEnd, body)
    }

    /// The rendered identity fields (`Name: value\r\n` each).
    @inline(__always)
    func withIdentityFields<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withBytes(header.tokenEnd, header.fieldsEnd, body)
    }

    var identityFieldsCount: Int { Int(header.fieldsEnd &- header.tokenEnd) }

    /// The user id (`sub`) in place, for the access line.
    @inline(__always)
    func withSubject<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        withBytes(header.subjectStart, header.subjectEnd, body)
    }

    /// The session id and subject for a revocation check, in place.
    @inline(__always)
    func withRevocationKeys<Result>(_ body: (_ id: UnsafeRawBufferPointer, _ subject: UnsafeRawBufferPointer) -> Result) -> Result {
        withUnsafeMutablePointers { header, base in
            let h = UnsafePointer(header)
            return body(UnsafeRawBufferPointer(start: base + Int(h.pointee.idStart), count: Int(h.pointee.idEnd &- h.pointee.idStart)),
                        UnsafeRawBufferPointer(start: base + Int(h.pointee.subjectStart),
                                               count: Int(h.pointee.subjectEnd &- h.pointee.subjectStart)))
        }
    }
}

/// A re-sealed session and its cookie value, kept on the entry it replaced (a class: most
/// entries never have one, and an optional reference takes 8 bytes of each, not 33).
final class SessionRenewal {
    let opened: OpenedSession
    let value: String
    let sealedAt: Int64

    init(opened: OpenedSession, value: String, sealedAt: Int64) {
        self.opened = opened
        self.value = value
        self.sealedAt = sealedAt
    }
}

/// `OpenedSession.session` once decoded.
final class DecodedSession {
    let session: Session
    init(_ session: Session) { self.session = session }
}
