import SidecarCrypto
import SidecarHTTP

/// A session the authenticator accepted, with what every request of it needs prepared once.
///
/// Two allocations, the object and `storage`: the sealed value it was opened from (the
/// cache key), the identity fields to forward (`IdentityHeaders.Layout`) and the session's
/// payload, back to back. What every request reads — the times, and the id and subject for
/// the revocation check and the access log — is decoded when it is opened; the whole
/// `Session` only when a rarer path asks for it (re-sealing, revalidation, an assertion,
/// the session endpoints). One buffer rather than an allocation per part (the token, the
/// session's id and strings, the fields): a miss allocates little, and an eviction frees one
/// block of cold memory rather than nine.
final class OpenedSession {
    /// token ‖ identity fields ‖ payload.
    private let storage: [UInt8]
    private let tokenEnd: Int
    private let fieldsEnd: Int
    /// The subject's bytes in `storage`.
    private let subjectRange: Range<Int>
    /// The session id's bytes in `storage`.
    private let idRange: Range<Int>
    /// The user id needs no escaping in an access line (`LogLineWriter.bare`), checked once.
    let subjectIsBare: Bool
    let expiresAt: Int64
    let idleDeadline: Int64
    let lastRevalidation: Int64
    let issuedAtMs: Int64
    /// Opened under an older secret: re-seal it with the first one.
    let needsReseal: Bool
    /// What the identity fields had to leave out (logged per forwarded request).
    let omission: IdentityHeaders.Omission
    /// From when a request of this token looks at its revalidation (`session.revalidate`):
    /// `lastRevalidation + period`, moved on while a check runs or after one Apple could not
    /// answer; `.max` without a refresh token or with revalidation off. One compare per request.
    var nextRevalidation: Int64
    /// With `assertion.enabled`: the whole `X-Auth-Assertion: <jwt>\r\n` field, appended after
    /// the identity fields, and when it is to be replaced by a fresh signature. One
    /// compare per request while it is fresh; empty when assertions are off.
    var assertionField: [UInt8] = []
    var assertionRenewAt: Int64 = .min
    /// The revocation generation (`RevocationView.generation`) it was last checked at: a hit
    /// at a newer one checks it against the revocations again (one compare per request when
    /// nothing was revoked; a logout elsewhere does not empty the cache).
    var checkedRevocations: UInt64 = 0
    /// This token's re-sealed successor while clients still send this token: a client that
    /// ignores `Set-Cookie` (scripts, load generators) or requests already in flight get the
    /// same new cookie until it is due itself, rather than a new seal, a new cache entry and
    /// an eviction per request.
    var renewal: SessionRenewal?

    /// The whole session, decoded from the payload the first time it is asked for.
    var session: Session {
        if let decoded { return decoded.session }
        let made = storage.withUnsafeBufferPointer { all in
            // These bytes were read as `SessionFields` when the entry was made: they cannot fail now.
            guard let fields = try? SessionFields(parsing: UnsafeBufferPointer(rebasing: all[fieldsEnd...])) else {
                preconditionFailure("a cached session payload no longer parses")
            }
            return Session(fields)
        }
        decoded = DecodedSession(made)
        return made
    }

    /// Boxed: a `Session` kept inline would add its 136 bytes to every cached entry, though only
    /// the rarer paths ever decode it.
    private var decoded: DecodedSession?

    /// An entry for `token`, whose payload `fields` was just opened from it. `revalidate`:
    /// `session.revalidate` in seconds, 0 when off. `scratch` is the caller's, reused from
    /// entry to entry (the percent-encoded name).
    init(token: UnsafeBufferPointer<UInt8>, fields: SessionFields, needsReseal: Bool, names: IdentityHeaderNames,
         revalidate: Int64 = 0, scratch: inout [UInt8]) {
        let layout = IdentityHeaders.Layout(fields, names: names, scratch: &scratch)
        let payload = fields.payload
        let fieldsEnd = token.count + layout.byteCount, total = fieldsEnd + payload.count
        tokenEnd = token.count
        self.fieldsEnd = fieldsEnd
        let scratchView = scratch
        storage = [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            let base = buffer.baseAddress!
            if let source = token.baseAddress { base.initialize(from: source, count: token.count) }
            layout.write(into: base + token.count, names: names, scratch: scratchView)
            if let source = payload.baseAddress { (base + fieldsEnd).initialize(from: source, count: payload.count) }
            initialized = total
        }
        subjectRange = (fieldsEnd + fields.subject.lowerBound)..<(fieldsEnd + fields.subject.upperBound)
        idRange = (fieldsEnd + fields.id.lowerBound)..<(fieldsEnd + fields.id.upperBound)
        subjectIsBare = LogLineWriter.isBare(fields[fields.subject])
        expiresAt = fields.expiresAt
        idleDeadline = fields.idleDeadline
        lastRevalidation = fields.lastRevalidation
        issuedAtMs = fields.issuedAtMs
        self.needsReseal = needsReseal
        omission = layout.omission
        nextRevalidation = revalidate > 0 && fields.appleRefreshToken != nil ? fields.lastRevalidation &+ revalidate : .max
    }

    /// An entry for a session sealed here (a re-sealed cookie, tests); nil if it does not fit
    /// the codec's bounds (sealing it would have failed).
    static func make(token: [UInt8], session: Session, needsReseal: Bool, names: IdentityHeaderNames,
                     revalidate: Int64 = 0, scratch: inout [UInt8]) -> OpenedSession? {
        guard session.isEncodable else { return nil }
        return session.encoded.withUnsafeBufferPointer { payload in
            token.withUnsafeBufferPointer { token in
                guard let fields = try? SessionFields(parsing: payload) else { return nil }
                return OpenedSession(token: token, fields: fields, needsReseal: needsReseal, names: names,
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

    /// The sealed value (cookie or bearer token) it was opened from.
    @inline(__always)
    func withToken<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<tokenEnd])) }
    }

    /// The rendered identity fields (`Name: value\r\n` each).
    var identityFields: ArraySlice<UInt8> { storage[tokenEnd..<fieldsEnd] }

    /// The user id (`sub`) in place, for the access line.
    @inline(__always)
    func withSubject<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[subjectRange])) }
    }

    /// The session id and subject for a revocation check, in place.
    @inline(__always)
    func withRevocationKeys<Result>(_ body: (_ id: UnsafeRawBufferPointer, _ subject: UnsafeRawBufferPointer) -> Result) -> Result {
        storage.withUnsafeBytes {
            body(UnsafeRawBufferPointer(rebasing: $0[idRange]), UnsafeRawBufferPointer(rebasing: $0[subjectRange]))
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
private final class DecodedSession {
    let session: Session
    init(_ session: Session) { self.session = session }
}
