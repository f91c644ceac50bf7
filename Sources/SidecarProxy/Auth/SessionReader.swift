import Logging
import SidecarCrypto
import SidecarHTTP
import SidecarStore

/// The request path's side of sign-in (loop thread only): finds a request's session — a bearer
/// token or the session cookie — through this worker's cache of opened sessions, checks it
/// against the store's revocations, re-seals a cookie that is due and attaches the signed
/// assertion. What it owns is per worker and never crosses threads.
final class SessionReader {
    private var settings: AuthSettings
    private let metrics: MetricsRecorder
    private let logger: Logger
    /// Starts the background check of a session that is due (`session.revalidate`).
    private let revalidator: SessionRevalidator
    private var revocations: RevocationView
    /// Sessions opened on this worker (checked again after a revocation; emptied when the
    /// settings change, made anew when its size does).
    private var cache: SessionCache
    /// Opens what the cache does not hold, with AES contexts keyed once per secret: one per
    /// sign-in realm (`AuthSettings.realms`), each bound to its realm's context.
    private var openers: [SessionOpener]
    /// Reused by every entry this worker renders (the percent-encoded name).
    private var renderScratch: [UInt8] = []
    /// Assertions signed on this worker by session id; nil when `assertion.enabled` is false.
    private var assertions: AssertionCache?

    init(
        settings: AuthSettings, metrics: MetricsRecorder, logger: Logger, revalidator: SessionRevalidator
    ) throws(AuthSetupError) {
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.revalidator = revalidator
        revocations = settings.shared.store.makeRevocationView()
        openers = try Self.makeOpeners(settings)
        cache = SessionCache(capacity: settings.sessionCacheEntries)
        assertions = settings.assertion.map { AssertionCache(signer: $0.signer) }
    }

    /// The openers for `settings`' secrets and realms; made before a reload is applied, since
    /// it can fail (then the old settings stay).
    static func makeOpeners(_ settings: AuthSettings) throws(AuthSetupError) -> [SessionOpener] {
        do {
            var openers: [SessionOpener] = []
            for realm in settings.realms.all {
                openers.append(try SessionOpener(settings.sessions, context: realm.sessionContext))
            }
            return openers
        } catch {
            throw AuthSetupError(description: "session keys: \(error)")
        }
    }

    /// A reload, with the openers `makeOpeners` made for it.
    func apply(_ new: AuthSettings, openers newOpeners: [SessionOpener]) {
        if new.shared !== settings.shared { revocations = new.shared.store.makeRevocationView() }
        if new.assertion?.signer !== settings.assertion?.signer {
            assertions = new.assertion.map { AssertionCache(signer: $0.signer) }
        }
        let resized = new.sessionCacheEntries != settings.sessionCacheEntries
        settings = new
        openers = newOpeners
        if resized {
            cache = SessionCache(capacity: new.sessionCacheEntries)
        } else {
            cache.removeAll()  // new secrets, cookie name, header names or assertion key
        }
    }

    /// How many opened sessions this worker holds, and how many it may.
    var cachedSessions: Int { cache.count }
    var cacheCapacity: Int { cache.capacity }

    /// Finds the session of a request: a bearer session token, else the session cookie.
    /// Tampered, expired, unknown-key and revoked values are simply no session.
    /// A revalidation it starts records its calls as spans of `trace` (the request's).
    func identify(
        _ head: HTTPRequestHead, now: Int64 = UnixTime.now(), trace: TraceContext = TraceContext(),
        into identity: inout RequestIdentity
    ) {
        head.withView { identify($0, host: head.authority ?? head.host, now: now, trace: trace, into: &identity) }
    }

    /// `identify` on the borrowed view the request path holds; `host`: the request's host
    /// (an absolute-form target's authority first), whose sign-in realm (`SignInRealms`) is
    /// the only one whose sessions it accepts.
    func identify(
        _ view: HeadView, host: ByteRange?, now: Int64 = UnixTime.now(), trace: TraceContext = TraceContext(),
        into identity: inout RequestIdentity
    ) {
        let settings = self.settings
        let realm = settings.realms.isSingle ? 0 : settings.realms.realm(forHost: host.map { view[$0] })
        forgetRevokedSessions()
        let typed = view.bytes.assumingMemoryBound(to: UInt8.self)
        var refusal = SessionOutcome.accepted
        for field in view.fields where view.name(of: field, is: "authorization") {
            guard let token = Self.bearerToken(view.bytes, field.value) else { continue }
            var outcome = SessionOutcome.accepted
            let opened = session(
                UnsafeBufferPointer(rebasing: typed[token]), via: .bearer, realm: realm, now: now, refusal: &outcome)
            if outcome.isOwnToken { identity.stripBearer = true }
            if outcome != .accepted { refusal = outcome }
            if let opened {
                identity.opened = opened
                identity.bearer = field.value
                if now >= opened.nextRevalidation, let confirmedAt = revalidator.revalidate(opened, now: now, trace: trace) {
                    // A bearer token cannot be re-sealed on a response: the app gets the new
                    // time with its next `/native/refresh`; until then nothing is due.
                    opened.nextRevalidation = confirmedAt &+ settings.revalidateSeconds
                }
                if now >= opened.assertionRenewAt { attachAssertion(opened, now: now) }
                break
            }
        }
        // Another realm's token opens as nothing here, yet it is this sidecar's: never forwarded.
        if identity.opened == nil, !identity.stripBearer, !settings.realms.isSingle, refusal != .accepted {
            noteBearer(view, into: &identity)
        }
        defer { if identity.opened == nil { identity.refusal = refusal } }
        guard let value = cookieValue(view, settings: settings, into: &identity) else { return }
        guard identity.opened == nil,
              let opened = session(
                UnsafeBufferPointer(rebasing: typed[value]), via: .cookie, realm: realm, now: now, refusal: &refusal)
        else { return }
        identity.opened = opened
        let revalidatedAt = now >= opened.nextRevalidation ? revalidator.revalidate(opened, now: now, trace: trace) : nil
        if let resealed = reseal(opened, realm: realm, now: now, revalidatedAt: revalidatedAt) {
            identity.opened = resealed.opened
            identity.setCookie = resealed.cookie
        }
        if let opened = identity.opened, now >= opened.assertionRenewAt { attachAssertion(opened, now: now) }
    }

    /// Gives `opened` a current assertion field: the worker's signature for this
    /// session while it is fresh, else a new one. With assertions off, the session never
    /// asks again (`renewAt` = .max), so the request path pays one compare.
    private func attachAssertion(_ opened: OpenedSession, now: Int64) {
        guard let assertions, let names = settings.assertion?.headerName else {
            opened.assertionField = []
            opened.assertionRenewAt = .max
            return
        }
        do {
            let signed = try assertions.assertion(for: opened.session, now: now)
            var field = names
            field.reserveCapacity(names.count + signed.token.count + 4)
            field.append(contentsOf: ": ".utf8)
            field.append(contentsOf: signed.token)
            field.append(contentsOf: "\r\n".utf8)
            opened.assertionField = field
            opened.assertionRenewAt = signed.renewAt
        } catch {
            // Forwarded without one: an upstream that verifies refuses it, which is the safe side.
            logger.error("assertion not signed", metadata: ["reason": "signing_failed", "error": "\(error)"])
            opened.assertionField = []
            opened.assertionRenewAt = now + 1
        }
    }

    /// On a public path: only whether (and how) the session cookie is to be removed.
    func noteCookie(_ view: HeadView, into identity: inout RequestIdentity) {
        if view.firstValue("authorization") != nil { noteBearer(view, into: &identity) }
        guard !settings.passCookie else { return }
        _ = cookieValue(view, settings: settings, into: &identity)
    }

    /// Marks a session token of this sidecar in `Authorization` (valid, expired or revoked)
    /// for removal without opening a session: the request is decided without one.
    private func noteBearer(_ view: HeadView, into identity: inout RequestIdentity) {
        for field in view.fields where view.name(of: field, is: "authorization")
            && ForwardedIdentity.carriesSessionToken(view.bytes, field.value, settings: settings) {
            identity.stripBearer = true
            return
        }
    }

    /// The session cookie's value range; unless cookies pass through, it is marked to be
    /// stripped and the other cookies are kept aside in the same pass.
    private func cookieValue(
        _ view: HeadView, settings: AuthSettings, into identity: inout RequestIdentity
    ) -> Range<Int>? {
        if settings.passCookie { return CookieHeader.find(settings.cookieNameBytes, in: view) }
        let value = CookieHeader.split(settings.cookieNameBytes, in: view, others: &identity.otherCookies)
        identity.stripCookie = value != nil
        return value
    }

    /// A revocation anywhere moves the store's generation: this worker's view then takes
    /// the new snapshot (one atomic load per request when nothing changed), and each cached
    /// session is checked against it again at its next request (`session(_:via:realm:now:refusal:)`).
    private func forgetRevokedSessions() {
        revocations.refreshIfStale()
    }

    /// What a request's `Authorization: Bearer` tokens amount to (`/native/refresh`, which
    /// must not fall back to the cookie).
    enum BearerLookup {
        case session(OpenedSession)
        /// Bearer tokens were sent; none opened. The first one's reason.
        case refused(SessionOutcome)
        case missing
    }

    func bearerSession(_ head: HTTPRequestHead, now: Int64 = UnixTime.now()) -> BearerLookup {
        forgetRevokedSessions()
        let realm = settings.realms.realm(of: head)
        return head.withView { view in
            let typed = view.bytes.assumingMemoryBound(to: UInt8.self)
            var first: SessionOutcome?
            for field in view.fields where view.name(of: field, is: "authorization") {
                guard let token = Self.bearerToken(view.bytes, field.value) else { continue }
                var refusal = SessionOutcome.accepted
                if let opened = session(
                    UnsafeBufferPointer(rebasing: typed[token]), via: .bearer, realm: realm, now: now, refusal: &refusal) {
                    return .session(opened)
                }
                if first == nil { first = refusal }
            }
            return first.map { .refused($0) } ?? .missing
        }
    }

    /// The session sealed in `token` for `realm`: from the cache (expiry checked again), else
    /// opened, checked against the revocations and cached. When it is refused, `refusal` says why.
    private func session(
        _ token: UnsafeBufferPointer<UInt8>, via carrier: SessionCarrier, realm: Int, now: Int64,
        refusal: inout SessionOutcome
    ) -> OpenedSession? {
        let found = cache.lookup(UnsafeRawBufferPointer(token))
        metrics.recordSessionCache(found: found != nil)
        if let cached = found {
            let outcome: SessionOutcome
            if cached.realm != realm {
                // Sealed for another site's sign-in: its context would not open it here either.
                metrics.recordSession(.authenticationFailed, via: carrier)
                refusal = .authenticationFailed
                return nil
            } else if now >= cached.expiresAt {
                outcome = .expired
            } else if now >= cached.idleDeadline {
                outcome = .idleExpired
            } else if cached.checkedRevocations != revocations.generation, isRevoked(cached) {
                outcome = .revoked
            } else {
                metrics.recordSession(.accepted, via: carrier)
                return cached
            }
            cache.remove(cached)
            metrics.recordSession(outcome, via: carrier)
            refusal = outcome
            return nil
        }
        // Opened into the opener's buffer and read in place: the entry is the only allocation.
        let opened: OpenedSession?
        do {
            opened = try openers[realm].withOpened(token, now: now) { fields, needsReseal in
                let payload = UnsafeRawBufferPointer(fields.payload)
                guard !revocations.isRevoked(
                    sessionID: UnsafeRawBufferPointer(rebasing: payload[fields.id]),
                    subject: UnsafeRawBufferPointer(rebasing: payload[fields.subject]), issuedAtMs: fields.issuedAtMs)
                else { return nil }
                return OpenedSession.opened(
                    token: token, fields: fields, needsReseal: needsReseal, names: settings.headers,
                    revalidate: settings.revalidateSeconds, scratch: &renderScratch)
            }
        } catch {
            refusal = SessionOutcome(error)
            metrics.recordSession(refusal, via: carrier)
            return nil
        }
        guard let entry = opened else {
            refusal = .revoked
            metrics.recordSession(.revoked, via: carrier)
            return nil
        }
        metrics.recordSession(.accepted, via: carrier)
        entry.checkedRevocations = revocations.generation
        entry.realm = realm
        cache.admit(entry)
        return entry
    }

    /// A cached session checked against revocations newer than it was: revoked, or marked
    /// as checked at the current generation.
    private func isRevoked(_ cached: OpenedSession) -> Bool {
        let issuedAtMs = cached.issuedAtMs
        let revoked = cached.withRevocationKeys { id, subject in
            revocations.isRevoked(sessionID: id, subject: subject, issuedAtMs: issuedAtMs)
        }
        if revoked { return true }
        cached.checkedRevocations = revocations.generation
        return false
    }

    /// A new idle deadline once `refresh_after` has passed since the last seal, the first
    /// secret when an older one opened it, or a revalidation the cookie does not carry yet
    /// (`revalidatedAt`: then the session is not due again for a period). The new value is
    /// cached too, and remembered by the old entry (`OpenedSession.renewal`).
    private func reseal(
        _ opened: OpenedSession, realm: Int, now: Int64, revalidatedAt: Int64?
    ) -> (opened: OpenedSession, cookie: [UInt8])? {
        // The times are the entry's own: decoding the whole session is left to the rare
        // request that is re-sealed.
        let oldSecret = opened.needsReseal, sessionIdleDeadline = opened.idleDeadline
        let lastSealed = sessionIdleDeadline - settings.idleTimeout
        let idleDeadline = min(now + settings.idleTimeout, opened.expiresAt)
        let revalidated = revalidatedAt.map { $0 > opened.lastRevalidation } ?? false
        guard oldSecret || revalidated
                || (now - lastSealed >= settings.refreshAfter && idleDeadline > sessionIdleDeadline)
        else { return nil }
        if !revalidated, let renewal = opened.renewal, now - renewal.sealedAt < settings.refreshAfter {
            return (renewal.opened, SetCookie.session(
                renewal.value, maxAge: renewal.opened.expiresAt - now, settings: settings, realm: settings.realms.all[realm]))
        }
        let session = opened.session
        var renewed = session
        renewed.idleDeadline = max(idleDeadline, session.idleDeadline)
        if revalidated, let revalidatedAt { renewed.lastRevalidation = revalidatedAt }
        guard let value = try? settings.sessions.sealSession(renewed, cookieName: settings.realms.all[realm].sessionContext)
        else {
            return nil
        }
        metrics.recordReseal(oldSecret ? .oldSecret : revalidated ? .revalidated : .refresh)
        guard let entry = OpenedSession.make(
            token: Array(value.utf8), session: renewed, needsReseal: false, names: settings.headers,
            revalidate: settings.revalidateSeconds, scratch: &renderScratch)
        else { return nil }
        entry.checkedRevocations = opened.checkedRevocations
        entry.realm = realm
        cache.insert(entry)
        opened.renewal = SessionRenewal(opened: entry, value: value, sealedAt: now)
        return (entry, SetCookie.session(
            value, maxAge: renewed.expiresAt - now, settings: settings, realm: settings.realms.all[realm]))
    }

    /// `Bearer <token>` (scheme case-insensitive) → the token's index range.
    static func bearerToken(_ buf: UnsafeRawBufferPointer, _ value: ByteRange) -> Range<Int>? {
        let start = Int(value.start), end = Int(value.end)
        guard end - start > 7 else { return nil }
        let scheme: [UInt8] = Array("bearer ".utf8)
        for i in 0..<7 where (buf[start + i] | (i < 6 ? 0x20 : 0)) != scheme[i] { return nil }
        var tokenStart = start + 7
        while tokenStart < end, buf[tokenStart] == 0x20 { tokenStart += 1 }
        return tokenStart < end ? tokenStart..<end : nil
    }
}
