import Glibc
import XCTest
@testable import SidecarApple
import SidecarCrypto

final class FaultAndControlTests: XCTestCase {
    private func arm(_ emulator: EmulatorFixture, _ fault: String) throws {
        let reply = try emulator.postJSON("/emulator/faults", #"{"fault":"\#(fault)"}"#)
        XCTAssertEqual(reply.status, 200, reply.text)
    }

    private func faultyIDToken(_ emulator: EmulatorFixture, _ fault: String) throws -> String? {
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        try arm(emulator, fault)
        let reply = try emulator.exchange(code: code)
        XCTAssertEqual(reply.status, 200, fault)
        return reply.json?.objectValue?["id_token"]?.stringValue
    }

    func testEachIDTokenFaultIsRefusedByAStrictVerifier() throws {
        let emulator = try EmulatorFixture()
        let expected: [(String, (JWTError) -> Bool)] = [
            ("alg_none", { $0 == .algorithmNotAllowed }),
            ("hs256_with_public_key", { $0 == .algorithmNotAllowed }),
            ("unknown_kid", { $0 == .unknownKey }),
            ("wrong_iss", { $0 == .wrongIssuer }),
            ("wrong_aud", { $0 == .wrongAudience }),
            ("expired", { $0 == .expired }),
            ("iat_future", { $0 == .issuedInFuture }),
            ("nonce_missing", { $0 == .nonceMissing }),
            ("wrong_nonce", { $0 == .nonceMismatch }),
            ("tampered_payload", { $0 == .badSignature }),
            ("truncated", { $0 == .badSignature || $0 == .malformed("signature encoding") }),
            ("extra_segment", { $0 == .malformed("expected 3 segments") }),
        ]
        for (fault, matches) in expected {
            let token = try XCTUnwrap(try faultyIDToken(emulator, fault), fault)
            XCTAssertThrowsError(try emulator.verify(token), fault) { error in
                XCTAssertTrue((error as? JWTError).map(matches) == true, "\(fault): \(error)")
            }
        }
        XCTAssertNil(try faultyIDToken(emulator, "no_id_token"))
        let normal = try XCTUnwrap(try faultyIDToken(emulator, "slow:1"))
        XCTAssertNoThrow(try emulator.verify(normal), "a fault is used once")

        let none = try XCTUnwrap(try faultyIDToken(emulator, "alg_none"))
        XCTAssertTrue(none.hasSuffix("."), "alg none carries an empty signature")
        let nonceMissing = try XCTUnwrap(try faultyIDToken(emulator, "nonce_missing"))
        let claims = try JWSVerifier(allowedAlgorithms: [.rs256]).verify(nonceMissing, keys: try emulator.keys()).claims
        XCTAssertNil(claims["nonce"])
        XCTAssertEqual(claims["nonce_supported"], .bool(true))
    }

    func testTokenEndpointFaults() throws {
        let emulator = try EmulatorFixture()
        let code = try XCTUnwrap(try emulator.authorize()["code"])
        try arm(emulator, "invalid_grant")
        XCTAssertEqual(try emulator.exchange(code: code).error, "invalid_grant")
        try arm(emulator, "invalid_client")
        XCTAssertEqual(try emulator.exchange(code: code).error, "invalid_client")
        try arm(emulator, "http_500")
        XCTAssertEqual(try emulator.exchange(code: code).status, 500)

        try arm(emulator, "hang")
        let secret = try emulator.secret()
        XCTAssertThrowsError(try RawHTTP.request(emulator.address, "POST", "/auth/token",
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: formBody([("grant_type", "authorization_code"), ("code", code), ("client_id", EmulatorFixture.webClient),
                            ("client_secret", secret), ("redirect_uri", EmulatorFixture.redirect)]), timeoutSeconds: 1),
            "hang never answers")

        try arm(emulator, "slow:400")
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let slow = try emulator.exchange(code: code)
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &end)
        let elapsed = (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1_000_000
        XCTAssertGreaterThanOrEqual(elapsed, 400)
        XCTAssertEqual(slow.status, 200, "slow answers the real response, late; the code was still unused")
    }

    func testFaultControlRefusesUnknownNamesAndCanBeCleared() throws {
        let emulator = try EmulatorFixture()
        XCTAssertEqual(try emulator.postJSON("/emulator/faults", #"{"fault":"nope"}"#).status, 400)
        XCTAssertEqual(try emulator.postJSON("/emulator/faults", #"{"faults":["expired","slow:5"]}"#)
            .json?.objectValue?["armed"], .array([.string("expired"), .string("slow:5")]))
        XCTAssertEqual(try RawHTTP.request(emulator.address, "DELETE", "/emulator/faults").json?.objectValue?["armed"], .array([]))
    }

    /// A notification made just as a second turns is dated from the moment it was made, not a
    /// second earlier: the second read before the turn and the millisecond after it once gave
    /// an event that came before a sign-in made just ahead of it, which it then left signed in.
    func testAnEventIsNeverDatedBeforeItWasMade() {
        func wallMilliseconds() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
        }
        let start = wallMilliseconds()
        let (now, eventTime) = AppleEmulator.eventTime(clock: {
            // The clock reads its second, then the second turns before the millisecond is read.
            let second = wallMilliseconds() / 1000
            while wallMilliseconds() / 1000 == second { usleep(1000) }
            return second
        })
        XCTAssertEqual(now, start / 1000)
        XCTAssertGreaterThanOrEqual(eventTime, start)
        XCTAssertLessThanOrEqual(eventTime, wallMilliseconds())
        // A clock of its own (set ahead): its second, the wall clock's millisecond within it.
        let ahead = AppleEmulator.eventTime(clock: { 2_000_000_000 })
        XCTAssertEqual(ahead.milliseconds / 1000, 2_000_000_000)
    }

    func testNotificationPayloadVerifiesLikeApples() throws {
        let emulator = try EmulatorFixture()
        let reply = try emulator.postJSON("/emulator/notify", #"{"type":"consent-revoked","sub":"000123.abc.0456"}"#)
        XCTAssertEqual(reply.status, 200, reply.text)
        let payload = try XCTUnwrap(reply.json?.objectValue?["payload"]?.stringValue)
        let notification = try AppleIDTokenVerifier(issuer: emulator.issuer, audiences: [EmulatorFixture.webClient])
            .verifyNotification(payload, keys: try emulator.keys(), now: emulator.clock.now)
        XCTAssertEqual(notification.type, .consentRevoked)
        XCTAssertEqual(notification.subject, "000123.abc.0456")
        // The emulator's second, with the wall clock's millisecond within it.
        XCTAssertEqual(notification.eventTimeMilliseconds / 1000, emulator.clock.now)
        let claims = try JWSVerifier(allowedAlgorithms: [.rs256]).verify(payload, keys: try emulator.keys()).claims
        XCTAssertNotNil(claims.string("events"), "events is a JSON string, as in real payloads")
        XCTAssertEqual(try emulator.postJSON("/emulator/notify", #"{"type":"bogus","sub":"x"}"#).status, 400)
        XCTAssertEqual(try emulator.postJSON("/emulator/notify", #"{"type":"consent-revoked","sub":"x","url":"ftp://x"}"#).status, 400)
    }

    func testUsersAndAutoApproveControls() throws {
        let emulator = try EmulatorFixture(autoApprove: nil)
        XCTAssertEqual(try emulator.postJSON("/emulator/users", #"[{"email":"zoe@example.net","firstName":"Zoë"}]"#).status, 200)
        let page = try emulator.get("/auth/authorize?client_id=com.example.web&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code&response_mode=form_post&scope=name")
        XCTAssertTrue(page.text.contains("zoe@example.net"))
        XCTAssertEqual(try emulator.postJSON("/emulator/users", #"[{"email":"not an email"}]"#).status, 400)
        XCTAssertEqual(try emulator.postJSON("/emulator/auto-approve", #"{"email":"sam@example.org","hideMyEmail":true}"#).status, 200)
        let fields = try emulator.authorize()
        XCTAssertTrue(fields["user"]?.contains("@privaterelay.appleid.com") == true)
        XCTAssertEqual(try emulator.postJSON("/emulator/auto-approve", "null").status, 200)
        XCTAssertTrue(try emulator.get("/auth/authorize?client_id=com.example.web&redirect_uri=https%3A%2F%2Fapp.example.com%2F.auth%2Fcallback&response_type=code").text.contains("id=\"approve\""))
    }
}
