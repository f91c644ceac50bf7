import XCTest
@testable import SidecarCrypto

final class JWKSTests: XCTestCase {
    func testParseSkipsUnusableKeysAndIsOrderIndependent() throws {
        let key = TestKeys.apple.publicKey
        let rsa = #"{"kty":"RSA","kid":"K1","use":"sig","alg":"RS256","n":"\#(key.jwkModulus)","e":"AQAB","x5t":"ignored"}"#
        let others = [
            #"{"kty":"EC","kid":"E1","crv":"P-256","x":"a","y":"b"}"#,
            #"{"kty":"RSA","kid":"ENC","use":"enc","n":"\#(key.jwkModulus)","e":"AQAB"}"#,
            #"{"kty":"RSA","kid":"PS","alg":"PS256","n":"\#(key.jwkModulus)","e":"AQAB"}"#,
            #"{"kty":"RSA","kid":"BAD","n":"AQAB","e":"AQAB"}"#,
            #"{"kty":"RSA","n":"\#(key.jwkModulus)","e":"AQAB"}"#,
        ]
        for document in ["{\"keys\":[\(rsa),\(others.joined(separator: ","))]}",
                         "{\"extra\":1,\"keys\":[\(others.reversed().joined(separator: ",")),\(rsa)]}"] {
            let set = try JWKSet(json: Array(document.utf8))
            XCTAssertEqual(set.keyIDs, ["K1"])
            XCTAssertNotNil(set.verificationKey(forKeyID: "K1"))
            XCTAssertNil(set.verificationKey(forKeyID: "E1"))
        }
        XCTAssertThrowsError(try JWKSet(json: Array("{\"keys\":[\(others[0])]}".utf8))) {
            XCTAssertEqual($0 as? JWKSet.ParseError, .noUsableKeys)
        }
        XCTAssertThrowsError(try JWKSet(json: Array("[]".utf8))) { XCTAssertEqual($0 as? JWKSet.ParseError, .notAJWKS) }
        let roundTrip = try JWKSet(json: Array(TestKeys.appleKeySet.jsonText.utf8))
        XCTAssertEqual(roundTrip.keyIDs, [TestKeys.appleKeyID])
    }

    private struct FetchFailed: Error {}

    func testRefreshPolicy() throws {
        var policy = JWKSRefreshPolicy(refreshInterval: 3600, unknownKeyInterval: 60, retryInterval: 30)
        XCTAssertEqual(policy.decide(now: 0), .initial)
        XCTAssertNil(policy.decide(now: 1), "in flight")
        policy.fetched(Result<JWKSet, FetchFailed>.success(TestKeys.appleKeySet), now: 1)
        XCTAssertNil(policy.decide(now: 2))
        // Unknown kid right after the first fetch: allowed (the first fetch does not count).
        XCTAssertTrue(policy.noteUnknownKey(now: 5))
        XCTAssertEqual(policy.decide(now: 5), .unknownKey)
        policy.fetched(Result<JWKSet, FetchFailed>.failure(FetchFailed()), now: 6)
        XCTAssertNotNil(policy.keySet, "last good set kept")
        XCTAssertFalse(policy.noteUnknownKey(now: 30), "at most once per 60 s")
        XCTAssertFalse(policy.noteUnknownKey(now: 64))
        XCTAssertEqual(policy.decide(now: 36), .periodic, "retry after a failure")
        policy.fetched(Result<JWKSet, FetchFailed>.success(TestKeys.appleKeySet), now: 36)
        XCTAssertTrue(policy.noteUnknownKey(now: 65))
        XCTAssertEqual(policy.decide(now: 65), .unknownKey)
        policy.fetched(Result<JWKSet, FetchFailed>.success(TestKeys.appleKeySet), now: 65)
        XCTAssertNil(policy.decide(now: 65 + 3599))
        XCTAssertEqual(policy.decide(now: 65 + 3600), .periodic)
    }

    func testInitialFailureRetries() {
        var policy = JWKSRefreshPolicy(refreshInterval: 3600)
        XCTAssertEqual(policy.decide(now: 0), .initial)
        policy.fetched(Result<JWKSet, FetchFailed>.failure(FetchFailed()), now: 0)
        XCTAssertNil(policy.keySet)
        XCTAssertNil(policy.decide(now: 10))
        XCTAssertEqual(policy.decide(now: 30), .retry)
    }
}
