import SidecarCrypto
import SidecarStore
import XCTest

@testable import SidecarProxy

/// The pure parts of `POST {prefix}/native`: the body, the nonce rules, the metric labels.
final class NativeSignInTests: XCTestCase {
    private func parse(_ json: String) throws(NativeSignInBody.Problem) -> NativeSignInBody {
        try NativeSignInBody.parse(Array(json.utf8))
    }

    private func problem(_ json: String) -> NativeSignInBody.Problem? {
        do { _ = try parse(json); return nil } catch { return error }
    }

    func testBodyFieldsAndNames() throws {
        let full = try parse(#"{"identityToken":"t","authorizationCode":"c","nonce":"n","firstName":"Jos\u00e9\u0007","lastName":" Ruiz ","email":"evil@example.com","extra":[1]}"#)
        XCTAssertEqual(full, NativeSignInBody(identityToken: "t", authorizationCode: "c", nonce: "n", name: "José Ruiz"))
        XCTAssertEqual(try parse(#"{"identityToken":"t","authorizationCode":null,"nonce":"","lastName":"Ruiz"}"#),
                       NativeSignInBody(identityToken: "t", authorizationCode: nil, nonce: nil, name: "Ruiz"))
        XCTAssertEqual(try parse(#"{"identityToken":"t","fullName":{"givenName":"Ann","familyName":null}}"#).name, "Ann")
        XCTAssertEqual(try parse(#"{"identityToken":"t","firstName":"Bo","fullName":{"givenName":"Ann"}}"#).name, "Bo")
        XCTAssertNil(try parse(#"{"identityToken":"t","firstName":"\u0001","fullName":null}"#).name)
        let long = try parse(#"{"identityToken":"t","firstName":"\#(String(repeating: "é", count: 200))"}"#)
        XCTAssertEqual(long.name?.utf8.count, 256)
    }

    func testMalformedBodies() {
        for json in ["", "x", "[]", "\"t\"", "null", "{", #"{"identityToken":1}"#, #"{"identityToken":{}}"#,
                     #"{"identityToken":"t","nonce":5}"#, #"{"identityToken":"t","firstName":[]}"#,
                     #"{"identityToken":"t","authorizationCode":false}"#, #"{"identityToken":"t","fullName":"Ann"}"#,
                     #"{"identityToken":"t","fullName":{"givenName":1}}"#] {
            XCTAssertEqual(problem(json), .invalid, json)
        }
        for json in ["{}", #"{"identityToken":""}"#, #"{"identityToken":null}"#, #"{"authorizationCode":"c"}"#] {
            XCTAssertEqual(problem(json), .identityTokenMissing, json)
        }
        XCTAssertEqual(NativeSignInBody.Problem.invalid.failure.status, 400)
        XCTAssertEqual(NativeSignInBody.Problem.identityTokenMissing.failure.reason, "identity_token_missing")
    }

    private let sealer = try! NativeNonceSealer(secrets: [[UInt8](repeating: 7, count: 32)])

    /// The reason of the `LoginFailure` `body` throws (nil when it throws none).
    private func failure(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return (error as? LoginFailure)?.reason ?? "\(error)" }
    }

    func testANonceIsOursUnexpiredAndItsTokenFormsAreRawOrHex() throws {
        let nonce = try sealer.seal(NativeNonce.random(expiresAt: 1_600), context: NativeNonces.context)
        let checked = try NativeNonces.check(nonce, sealer: sealer, now: 1_000)
        XCTAssertEqual(checked.expectation, .oneOf([nonce, SHA256.hexDigest(Array(nonce.utf8))]))
        XCTAssertEqual(checked.claim, NativeNonces.Claim(key: SHA256.hash(Array(nonce.utf8)), until: 1_600))
        XCTAssertEqual(failure { _ = try NativeNonces.check(nonce, sealer: sealer, now: 1_600) }, "nonce_expired")
        let other = try NativeNonceSealer(secrets: [[UInt8](repeating: 8, count: 32)])
        let foreign = try other.seal(NativeNonce.random(expiresAt: 1_600), context: NativeNonces.context)
        for bad in [foreign, "x", "", String(nonce.dropLast(2)), nonce + "A"] {
            XCTAssertEqual(failure { _ = try NativeNonces.check(bad, sealer: sealer, now: 1_000) }, "nonce_invalid", bad)
        }
        // Sealed for another context (e.g. a session sealed by the same secrets) never opens as a nonce.
        let elsewhere = try sealer.seal(NativeNonce.random(expiresAt: 1_600), context: "__Host-sidecar")
        XCTAssertEqual(failure { _ = try NativeNonces.check(elsewhere, sealer: sealer, now: 1_000) }, "nonce_invalid")
    }

    /// A token replayed without its nonce in the body is claimed under the same key as a
    /// named one, whether it carries the nonce raw or hashed.
    func testImplicitClaimsUseTheSameKeyAsNamedNonces() throws {
        let nonce = try sealer.seal(NativeNonce.random(expiresAt: 1_600), context: NativeNonces.context)
        let named = try NativeNonces.check(nonce, sealer: sealer, now: 1_000).claim
        let raw = try NativeNonces.implicitClaim(tokenNonce: nonce, sealer: sealer, now: 1_000, tokenValidUntil: 90_000)
        XCTAssertEqual(raw, named)
        let hex = SHA256.hexDigest(Array(nonce.utf8))
        let hashed = try NativeNonces.implicitClaim(tokenNonce: hex, sealer: sealer, now: 1_000, tokenValidUntil: 90_000)
        XCTAssertEqual(hashed, NativeNonces.Claim(key: named.key, until: 90_000))
        XCTAssertEqual(try NativeNonces.implicitClaim(tokenNonce: hex.uppercased(), sealer: sealer, now: 1_000,
                                                      tokenValidUntil: 0)?.until, 1_000 + AuthShared.nativeNonceSeconds)
        XCTAssertNil(try NativeNonces.implicitClaim(tokenNonce: "app-own-nonce", sealer: sealer, now: 1_000, tokenValidUntil: 9))
        XCTAssertNil(try NativeNonces.implicitClaim(tokenNonce: String(hex.dropLast()) + "g", sealer: sealer, now: 1_000,
                                                    tokenValidUntil: 9))
        XCTAssertEqual(failure {
            _ = try NativeNonces.implicitClaim(tokenNonce: nonce, sealer: sealer, now: 2_000, tokenValidUntil: 90_000)
        }, "nonce_expired")
    }

    func testSpendingANonceTwiceIsRefused() throws {
        // Real times: the store forgets (never remembers) a key whose expiry has passed by its clock.
        let shared = AuthShared()
        let now = UnixTime.now()
        let nonce = try sealer.seal(NativeNonce.random(expiresAt: now + 600), context: NativeNonces.context)
        let claim = try NativeNonces.check(nonce, sealer: sealer, now: now).claim
        func spend(_ kind: AuthShared.SingleUse) -> ClaimResult {
            var result = ClaimResult.unavailable("no answer")
            shared.claimOnce(kind, claim.key, until: claim.until) { result = $0 }  // a memory store answers at once
            return result
        }
        XCTAssertEqual(spend(.nativeNonce), .claimed)
        XCTAssertEqual(spend(.nativeNonce), .alreadyUsed)
        // A login state with the same digest is another key space.
        XCTAssertEqual(spend(.loginState), .claimed)
    }

    func testNativeFailuresHaveTheirOwnBoundedLabels() {
        let failures: [LoginFailure] = [
            .bodyInvalid, .identityTokenMissing, .nonceRequired, .nonceInvalid, .nonceExpired, .nonceReplayed,
            .codeSubjectMismatch, .codeToken(.badSignature), .token(.wrongAudience), .policyDenied(.email),
            .nativeExchange(.rejected(.invalidGrant, description: nil, status: 400)), .noIDToken, .keysUnavailable,
            .sessionTooLarge, .internalError, .nativeExchange(.appleServerError(status: 500)),
        ]
        for failure in failures {
            XCTAssertNotEqual(NativeOutcome.index(of: failure.reason), NativeOutcome.other, failure.reason)
        }
        XCTAssertEqual(NativeOutcome.index(of: "exchange_made_up_by_apple"), NativeOutcome.other)
        XCTAssertEqual(Set(NativeOutcome.labels).count, NativeOutcome.labels.count)
        XCTAssertEqual(LoginFailure.nativeExchange(.rejected(.invalidGrant, description: nil, status: 400)).status, 401)
        XCTAssertEqual(LoginFailure.nativeExchange(.rejected(.invalidClient, description: nil, status: 400)).status, 502)
        XCTAssertEqual(NativeRefreshOutcome.labels[NativeRefreshOutcome.index(of: .accepted)], "ok")
        XCTAssertEqual(NativeRefreshOutcome.labels[NativeRefreshOutcome.index(of: .revoked)], "revoked")
        XCTAssertEqual(NativeRefreshOutcome.labels[NativeRefreshOutcome.index(of: nil)], "bearer_missing")
    }

    func testNativeFamiliesAreRendered() {
        var metrics = WorkerMetrics()
        metrics.nativeSignIns[NativeOutcome.index(of: "nonce_replayed")] += 2
        metrics.nativeRefreshes[NativeRefreshOutcome.index(of: .idleExpired)] += 1
        let board = MetricsBoard(workers: 1)
        board.publish(metrics, worker: 0)
        let lines = Set(board.render().split(separator: "\n").map(String.init))
        for expected in [
            "sidecar_native_signins_total{outcome=\"ok\"} 0", "sidecar_native_signins_total{outcome=\"nonce_replayed\"} 2",
            "sidecar_native_refreshes_total{outcome=\"ok\"} 0", "sidecar_native_refreshes_total{outcome=\"idle_expired\"} 1",
        ] {
            XCTAssertTrue(lines.contains(expected), expected)
        }
    }
}
