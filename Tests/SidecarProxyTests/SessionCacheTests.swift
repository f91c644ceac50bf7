import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarStore
import XCTest

@testable import SidecarProxy

final class SessionCacheTests: XCTestCase {
    private var names: IdentityHeaderNames!

    override func setUpWithError() throws {
        names = IdentityHeaderNames(try makeConfig(secret: Self.secretA).headers)
    }

    private func session(subject: String = "001234.abcdef", expiresAt: Int64 = 2_000_000_000,
                         idleDeadline: Int64 = 1_900_000_000) -> Session {
        Session(id: [UInt8](repeating: 7, count: 16), subject: subject, email: "a@example.com", emailVerified: true,
                privateEmail: false, name: "Zoë", issuedAt: 1_000, expiresAt: expiresAt, idleDeadline: idleDeadline,
                lastRevalidation: 1_000, appleRefreshToken: nil)
    }

    private func entry(_ token: String) -> OpenedSession {
        OpenedSession.make(token: Array(token.utf8), session: session(), needsReseal: false, names: names)!
    }

    private func lookup(_ cache: SessionCache, _ token: String) -> OpenedSession? {
        Array(token.utf8).withUnsafeBytes { cache.lookup($0) }
    }

    // MARK: the cache itself

    func testHitReturnsTheEntryOfExactlyThoseBytes() {
        let cache = SessionCache()
        let stored = entry("token-one")
        cache.insert(stored)
        XCTAssertTrue(lookup(cache, "token-one") === stored)
        XCTAssertNil(lookup(cache, "token-two"))
        XCTAssertNil(lookup(cache, "token-on"))
        XCTAssertNil(lookup(cache, ""))
        XCTAssertEqual(cache.count, 1)
    }

    func testAFullSetAdmitsOnlyASessionSeenBeforeAndInPlaceOfAnEntryWithoutHits() {
        let cache = SessionCache(capacity: 4)  // one set of four ways
        for token in ["t1", "t2", "t3", "t4"] { XCTAssertTrue(cache.admit(entry(token))) }  // free ways
        XCTAssertFalse(cache.admit(entry("t5")), "a first sighting does not evict")
        XCTAssertNil(lookup(cache, "t5"))
        _ = lookup(cache, "t1"); _ = lookup(cache, "t3"); _ = lookup(cache, "t4")
        XCTAssertTrue(cache.admit(entry("t5")), "the second sighting gets in")
        XCTAssertNotNil(lookup(cache, "t5"))
        XCTAssertNil(lookup(cache, "t2"), "instead of the one entry without hits")
        for token in ["t1", "t3", "t4"] { XCTAssertNotNil(lookup(cache, token), token) }
        XCTAssertEqual(cache.count, 4)
        XCTAssertFalse(cache.admit(entry("t6")))
        XCTAssertFalse(cache.admit(entry("t6")), "seen, but every entry has earned its place")
        XCTAssertNil(lookup(cache, "t6"))
    }

    /// More users in turn than the cache holds: plain LRU (or admission that evicts any
    /// entry) replaces every entry before its user comes back and never hits. Entries that
    /// hit stay, so about capacity ÷ users of the requests hit once it settles.
    func testUsersCyclingThroughMoreThanTheCacheHoldsStillHit() {
        let cache = SessionCache(capacity: 256, mixKeys: (0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321))
        // Distinct characters 8..<24, where a sealed value carries its random nonce (the mix reads them).
        let users = (0..<640).map { i -> OpenedSession in
            let id = String(UInt64(i + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
            return entry("user----" + String(repeating: "0", count: 16 - id.count) + id + "-rest-of-the-token")
        }
        var hits = 0
        for round in 0..<8 {
            for user in users {
                let found = user.withToken { cache.lookup($0) }
                if found != nil {
                    if round >= 4 { hits += 1 }
                } else {
                    cache.admit(user)
                }
            }
        }
        let ratio = Double(hits) / Double(4 * users.count)
        XCTAssertGreaterThan(ratio, 0.25, "256 of 640 users can stay cached (0.4 at best)")
    }

    /// Hit counts are halved as admissions go on: entries whose users stopped coming give
    /// way to a new set of regular users.
    func testEntriesThatStopHittingAgeOut() {
        let cache = SessionCache(capacity: 4, mixKeys: (0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321),
                                 doorkeeperBits: 1 << 16)
        let old = ["o1", "o2", "o3", "o4"].map(entry)
        for e in old { cache.admit(e) }
        for e in old { _ = e.withToken { cache.lookup($0) } }  // one hit each
        let newcomer = entry("regular")
        var admitted = false
        for i in 0..<40 where !admitted {
            admitted = cache.admit(newcomer)
            if !admitted { cache.admit(entry("passer-\(i)")) }
        }
        XCTAssertTrue(admitted, "after the counts were halved, a regular gets in")
    }

    func testTheDoorkeeperForgetsAfterItsWindow() {
        // Fixed mix keys and 65,536 bits for a window of 16: no false positive, the same bits every run.
        let cache = SessionCache(capacity: 4, mixKeys: (0x0123_4567_89ab_cdef, 0x0fed_cba9_8765_4321),
                                 doorkeeperBits: 1 << 16)
        for token in ["t1", "t2", "t3", "t4"] { cache.admit(entry(token)) }
        XCTAssertEqual(cache.doorkeeperCount, 0, "free ways take sessions without the doorkeeper")
        XCTAssertFalse(cache.admit(entry("late")))
        for i in 0..<14 { cache.admit(entry("once-\(i)")) }
        XCTAssertEqual(cache.doorkeeperCount, 15)
        XCTAssertTrue(cache.admit(entry("late")), "seen within the window")
        for i in 14..<20 { cache.admit(entry("once-\(i)")) }
        XCTAssertLessThan(cache.doorkeeperCount, 16, "emptied after 4 × capacity sessions")
        XCTAssertFalse(cache.admit(entry("once-1")), "seen before the doorkeeper was emptied: a first sighting again")
    }

    func testAnEntryDecodesItsSessionOnlyWhenAskedAndKeepsItsFields() {
        var original = session(subject: "000241.55ebfd382f1de608b6d24a78892f76ff.0896")
        original.appleRefreshToken = "r.refresh"
        original.appleClientID = "com.example.app"
        original.issuedAtMillis = 517
        let opened = OpenedSession.make(token: Array("sealed".utf8), session: original, needsReseal: true, names: names,
                                        revalidate: 86_400)!
        XCTAssertEqual(opened.withSubject { String(decoding: $0, as: UTF8.self) }, original.subject)
        XCTAssertEqual(opened.expiresAt, original.expiresAt)
        XCTAssertEqual(opened.idleDeadline, original.idleDeadline)
        XCTAssertEqual(opened.lastRevalidation, original.lastRevalidation)
        XCTAssertEqual(opened.issuedAtMs, original.issuedAtMs)
        XCTAssertEqual(opened.nextRevalidation, original.lastRevalidation + 86_400)
        XCTAssertTrue(opened.needsReseal)
        opened.withToken { XCTAssertEqual(Array($0), Array("sealed".utf8)) }
        opened.withRevocationKeys { id, subject in
            XCTAssertEqual(Array(id), original.id)
            XCTAssertEqual(String(decoding: subject, as: UTF8.self), original.subject)
        }
        XCTAssertEqual(opened.session, original)
        XCTAssertEqual(opened.withIdentityFields { Array($0) }, IdentityHeaders.render(original, names: names).fields)
        // Without a refresh token there is nothing to revalidate.
        original.appleRefreshToken = nil
        XCTAssertEqual(OpenedSession.make(token: [1], session: original, needsReseal: false, names: names,
                                          revalidate: 86_400)?.nextRevalidation, .max)
        // A session the codec cannot carry is no entry (sealing it fails too).
        original.subject = ""
        XCTAssertNil(OpenedSession.make(token: [1], session: original, needsReseal: false, names: names))
    }

    func testSameSlotDifferentBytesIsAMissAfterTheFullComparison() {
        // One slot: every token hashes there, so only the constant-time comparison tells them apart.
        let cache = SessionCache(capacity: 1)
        cache.insert(entry("abcdefgh"))
        XCTAssertNil(lookup(cache, "abcdefgX"))  // same length, last byte differs
        XCTAssertNil(lookup(cache, "Xbcdefgh"))  // same length, first byte differs
        XCTAssertNil(lookup(cache, "abcdefghi"))  // a longer token with the same prefix
        XCTAssertNotNil(lookup(cache, "abcdefgh"))
    }

    func testANewEntryEvictsTheOneInItsSlotAndTheSizeIsBounded() {
        let one = SessionCache(capacity: 1)
        one.insert(entry("first"))
        one.insert(entry("second"))
        XCTAssertNil(lookup(one, "first"))
        XCTAssertNotNil(lookup(one, "second"))
        XCTAssertEqual(one.count, 1)

        let cache = SessionCache(capacity: 64)
        XCTAssertEqual(cache.capacity, 64)
        for i in 0..<1_000 { cache.insert(entry("token-\(i)")) }
        XCTAssertLessThanOrEqual(cache.count, 64)
        XCTAssertNotNil(lookup(cache, "token-999"))  // the newest always stays
    }

    func testAFullSetGivesUpItsLeastRecentlyUsedEntry() {
        let cache = SessionCache(capacity: SessionCache.ways)  // one set: every token shares it
        for name in ["a", "b", "c", "d"] { cache.insert(entry("token-\(name)")) }
        XCTAssertEqual(cache.count, 4)
        XCTAssertNotNil(lookup(cache, "token-a"))  // a is now the most recently used
        cache.insert(entry("token-e"))
        XCTAssertNil(lookup(cache, "token-b"), "b was the least recently used")
        for name in ["a", "c", "d", "e"] { XCTAssertNotNil(lookup(cache, "token-\(name)"), name) }
        XCTAssertEqual(cache.count, 4)
    }

    func testRemoveAndRemoveAll() {
        let cache = SessionCache(capacity: 1)
        let old = entry("old")
        cache.insert(old)
        let new = entry("new")
        cache.insert(new)
        cache.remove(old)  // already evicted: the newer entry in its slot stays
        XCTAssertNotNil(lookup(cache, "new"))
        cache.remove(new)
        XCTAssertNil(lookup(cache, "new"))
        XCTAssertEqual(cache.count, 0)

        let many = SessionCache()
        for i in 0..<10 { many.insert(entry("t\(i)")) }
        many.removeAll()
        XCTAssertEqual(many.count, 0)
        XCTAssertNil(lookup(many, "t3"))
    }

    func testTheIdentityFieldsAreRenderedOnceWhenCached() {
        let opened = entry("t")
        let (expected, omission) = IdentityHeaders.render(session(), names: names)
        XCTAssertEqual(omission, .none)
        XCTAssertEqual(opened.withIdentityFields { Array($0) }, expected)
        XCTAssertEqual(opened.omission, .none)
        XCTAssertTrue(opened.withIdentityFields { String(decoding: $0, as: UTF8.self) }
            .contains(String(decoding: names.name, as: UTF8.self) + ": Zo%C3%AB\r\n"))
    }

    // MARK: through the authenticator

    private struct Harness {
        let loop: EventLoop
        let auth: Authenticator
        let metrics: MetricsRecorder
        let settings: AuthSettings
        let cookieName: String
    }

    private func makeConfig(cookieName: String = "sidecar_session", secret: String, cacheEntries: Int? = nil) throws -> Config {
        try AuthTestConfig.parse(
            secret: secret, session: ["cookie_name: \(cookieName)"] + (cacheEntries.map { ["cache_entries: \($0)"] } ?? []))
    }

    private static let secretA = Base64.encode([UInt8](repeating: 0x11, count: 32))
    private static let secretB = Base64.encode([UInt8](repeating: 0x22, count: 32))

    /// The store's clock is the tests' (sessions here expire around t = 1,500 s).
    private func makeHarness(
        shared: AuthShared = AuthShared(store: MemoryStore(clock: StoreClock { 1_500 })), cacheEntries: Int? = nil
    ) throws -> Harness {
        let loop = try EventLoop()
        let settings = try AuthSettings(config: makeConfig(secret: Self.secretA, cacheEntries: cacheEntries), shared: shared)
        let metrics = MetricsRecorder(
            loop: loop, board: MetricsBoard(workers: 1), readiness: Readiness(workers: 1), worker: 0)
        let auth = try Authenticator(loop: loop, settings: settings, upstreamTimeoutMs: 5_000, metrics: metrics)
        return Harness(loop: loop, auth: auth, metrics: metrics, settings: settings, cookieName: settings.cookieName)
    }

    private func head(cookie: String) throws -> HTTPRequestHead {
        let text = "GET / HTTP/1.1\r\nHost: app\r\nCookie: other=1; \(cookie)\r\n\r\n"
        return try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8)))
    }

    private func identify(_ harness: Harness, _ head: HTTPRequestHead, now: Int64) -> RequestIdentity {
        var identity = RequestIdentity()
        harness.auth.sessions.identify(head, now: now, into: &identity)
        return identity
    }

    private func sealed(_ harness: Harness, _ session: Session) throws -> String {
        "\(harness.cookieName)=" + (try harness.settings.sessions.sealSession(session, cookieName: harness.cookieName))
    }

    func testASecondRequestIsServedFromTheCache() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        let request = try head(cookie: try sealed(h, session()))
        let first = identify(h, request, now: 1_500)
        let second = identify(h, request, now: 1_501)
        XCTAssertNotNil(first.opened)
        XCTAssertTrue(first.opened === second.opened)
        XCTAssertEqual(second.session?.subject, "001234.abcdef")
        XCTAssertTrue(second.stripCookie)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 1)
        XCTAssertEqual(h.metrics.metrics.sessions(.accepted, via: .cookie), 2)
    }

    func testTheCacheHasTheConfiguredSizeAndCountsItsHitsAndMisses() throws {
        let h = try makeHarness(cacheEntries: 64)
        defer { h.auth.stop() }
        XCTAssertEqual(h.auth.sessions.cacheCapacity, 64)
        // 200 users in turn, twice: the first round only misses; in the second, the cache
        // holds at most 64 of them, so at most 64 are found.
        var sessions: [Session] = []
        for i in 0..<200 {
            var user = session()
            user.id = (0..<16).map { UInt8(truncatingIfNeeded: i &+ $0 &* 31) }
            sessions.append(user)
        }
        let requests = try sessions.map { try head(cookie: try sealed(h, $0)) }
        for round in 0..<2 {
            for request in requests { XCTAssertNotNil(identify(h, request, now: 1_500 + Int64(round)).opened) }
        }
        let counts = h.metrics.metrics.sessionCache
        XCTAssertEqual(counts[0] + counts[1], 400)
        XCTAssertGreaterThan(counts[0], 0, "the users a full set kept are found")
        XCTAssertLessThanOrEqual(counts[0], 64)
        XCTAssertLessThanOrEqual(h.auth.sessions.cachedSessions, 64)
        XCTAssertEqual(h.metrics.metrics.sessions(.accepted, via: .cookie), 400)

        // A reload with another size makes the cache anew at that size; one without keeps it.
        let shared = h.settings.shared
        try h.auth.apply(AuthSettings(config: makeConfig(secret: Self.secretA, cacheEntries: 64), shared: shared))
        XCTAssertEqual(h.auth.sessions.cacheCapacity, 64)
        try h.auth.apply(AuthSettings(config: makeConfig(secret: Self.secretA, cacheEntries: 300), shared: shared))
        XCTAssertEqual(h.auth.sessions.cacheCapacity, 512, "rounded up to a power of two")
        XCTAssertEqual(h.auth.sessions.cachedSessions, 0)
        for request in requests { _ = identify(h, request, now: 1_502) }
        // 200 users over 128 sets of 4: a set overflows where more than 4 land (rarely).
        XCTAssertGreaterThan(h.auth.sessions.cachedSessions, 180, "nearly every user fits now")
    }

    func testRealSealedValuesSpreadOverTheSets() throws {
        // The set mixes only the nonce characters and the length: 1,000 real sealed values in
        // 256 sets of 4 overflow a set only where more than 4 of them land (Poisson, mean
        // 3.9): 256 × E[min(X, 4)] ≈ 813 stay (784–846 in 2,000 simulated fills). A mix that
        // ignored the nonce would keep at most 4.
        let h = try makeHarness()
        defer { h.auth.stop() }
        let cache = SessionCache(capacity: 1024)
        for _ in 0..<1000 {
            let value = try h.settings.sessions.sealSession(session(), cookieName: h.cookieName)
            cache.insert(OpenedSession.make(token: Array(value.utf8), session: session(), needsReseal: false, names: names)!)
        }
        XCTAssertGreaterThan(cache.count, 760)
        XCTAssertLessThanOrEqual(cache.count, 1000)
    }

    func testTamperedAndFailedValuesAreNeverCached() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        var cookie = try sealed(h, session())
        let last = cookie.removeLast()
        cookie.append(last == "A" ? "B" : "A")
        XCTAssertNil(identify(h, try head(cookie: cookie), now: 1_500).opened)
        XCTAssertNil(identify(h, try head(cookie: "\(h.cookieName)=garbage"), now: 1_500).opened)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 0)
    }

    func testExpiryIsCheckedOnEveryHit() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        let absolute = try head(cookie: try sealed(h, session(expiresAt: 2_000, idleDeadline: 2_000)))
        XCTAssertNotNil(identify(h, absolute, now: 1_500).opened)
        XCTAssertNil(identify(h, absolute, now: 2_000).opened)
        XCTAssertEqual(h.metrics.metrics.sessions(.expired, via: .cookie), 1)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 0)  // dropped, so the next request opens (and rejects) it again

        let idle = try head(cookie: try sealed(h, session(expiresAt: 9_000, idleDeadline: 1_600)))
        XCTAssertNotNil(identify(h, idle, now: 1_500).opened)
        XCTAssertNil(identify(h, idle, now: 1_600).opened)
        XCTAssertEqual(h.metrics.metrics.sessions(.idleExpired, via: .cookie), 1)
    }

    func testARevokedCachedSessionIsRefusedAndTheOthersStayCached() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        let revoked = session()
        var other = session(subject: "009999.other")
        other.id = [UInt8](repeating: 9, count: 16)
        let revokedHead = try head(cookie: try sealed(h, revoked))
        let otherHead = try head(cookie: try sealed(h, other))
        XCTAssertNotNil(identify(h, revokedHead, now: 1_500).opened)
        let otherEntry = try XCTUnwrap(identify(h, otherHead, now: 1_500).opened)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 2)

        let store = try XCTUnwrap(h.settings.shared.store as? MemoryStore)
        try store.revokeSession(id: revoked.id, expiresAt: revoked.expiresAt)
        XCTAssertNil(identify(h, revokedHead, now: 1_501).opened)  // a hit, checked again
        XCTAssertNil(identify(h, revokedHead, now: 1_502).opened)  // removed, opened, refused
        XCTAssertEqual(h.metrics.metrics.sessions(.revoked, via: .cookie), 2)
        XCTAssertTrue(identify(h, otherHead, now: 1_501).opened === otherEntry)  // still cached
        XCTAssertEqual(h.auth.sessions.cachedSessions, 1)

        // A revocation by subject (Apple's consent-revoked) reaches a cached session too.
        try store.revokeSubject(other.subject, issuedAtOrBeforeMs: 1_501_000, keepUntil: 2_000_000_000)
        XCTAssertNil(identify(h, otherHead, now: 1_503).opened)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 0)
    }

    func testAReloadEmptiesTheCacheAndUsesTheNewSecrets() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        let request = try head(cookie: try sealed(h, session()))
        XCTAssertNotNil(identify(h, request, now: 1_500).opened)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 1)

        let rotated = try AuthSettings(config: makeConfig(secret: Self.secretB), shared: h.settings.shared)
        try h.auth.apply(rotated)
        XCTAssertEqual(h.auth.sessions.cachedSessions, 0)
        XCTAssertNil(identify(h, request, now: 1_501).opened)  // sealed under a secret no longer configured
        XCTAssertEqual(h.metrics.metrics.sessions(.unknownKey, via: .cookie), 1)
    }

    func testAResealedCookieIsCachedUnderItsNewValue() throws {
        let h = try makeHarness()
        defer { h.auth.stop() }
        // Sealed long ago: refresh_after has passed, so the request gets a new cookie.
        let old = session(expiresAt: 1_000_000_000, idleDeadline: 1_000 + h.settings.idleTimeout)
        let request = try head(cookie: try sealed(h, old))
        let now: Int64 = 1_000 + h.settings.refreshAfter + 10
        let first = identify(h, request, now: now)
        let cookie = try XCTUnwrap(first.setCookie)
        XCTAssertEqual(first.session?.idleDeadline, now + h.settings.idleTimeout)
        let value = String(decoding: cookie, as: UTF8.self).split(separator: ";")[0]
        let renewed = identify(h, try head(cookie: String(value)), now: now + 1)
        XCTAssertTrue(renewed.opened === first.opened)
        XCTAssertNil(renewed.setCookie)
    }
}
