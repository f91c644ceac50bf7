import Foundation
import SidecarCrypto
import XCTest

@testable import SidecarACME

final class ACMEClientTests: XCTestCase {
    private func client(_ ca: ScriptedCA) throws -> ACMEClient {
        ACMEClient(
            directoryURL: try XCTUnwrap(ACMEURL(ScriptedCA.base + "/dir")),
            accountKey: .es256(try P256PrivateKey.generate()), transport: ca)
    }

    private func decodeJWS(_ body: [UInt8]) throws -> (header: [String: Any], payload: String) {
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: String])
        let header = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(object["protected"])))
        let payload = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(object["payload"])))
        return (try XCTUnwrap(JSONSerialization.jsonObject(with: Data(header)) as? [String: Any]),
                String(decoding: payload, as: UTF8.self))
    }

    func testNewAccountIsSignedWithJWKThenLaterRequestsWithKid() throws {
        let ca = ScriptedCA.standard()
        ca.on("/order", ScriptedCA.json(201, """
            {"status":"pending","authorizations":["\(ScriptedCA.base)/authz/1"],"finalize":"\(ScriptedCA.base)/fin"}
            """, [("Location", ScriptedCA.base + "/order/1")]))
        let acme = try client(ca)
        try acme.register(contact: "ops@example.com", binding: nil)
        XCTAssertEqual(acme.accountURL, ScriptedCA.base + "/acct/1")
        let (url, order) = try acme.newOrder(domains: ["app.example.com"], replaces: nil)
        XCTAssertEqual(url.text, ScriptedCA.base + "/order/1")
        XCTAssertEqual(order.status, .pending)

        let posts = ca.sent.filter { $0.method == "POST" }
        let account = try decodeJWS(posts[0].body)
        XCTAssertNotNil(account.header["jwk"])
        XCTAssertNil(account.header["kid"])
        XCTAssertEqual(account.header["alg"] as? String, "ES256")
        XCTAssertEqual(account.header["url"] as? String, ScriptedCA.base + "/account")
        XCTAssertTrue(account.payload.contains("mailto:ops@example.com"))
        let newOrder = try decodeJWS(posts[1].body)
        XCTAssertNil(newOrder.header["jwk"])
        XCTAssertEqual(newOrder.header["kid"] as? String, ScriptedCA.base + "/acct/1")
        // The nonce of the account's answer is used for the order: one GET of newNonce in all.
        XCTAssertEqual(ca.sent.filter { $0.url.hasSuffix("/nonce") }.count, 1)
    }

    func testSignatureVerifiesWithTheAccountKey() throws {
        let key = try P256PrivateKey.generate()
        let jws = try JWSFlattened.sign(protected: ["nonce": .string("n")], payload: Array("{}".utf8), key: .es256(key))
        guard case .object(let members) = jws, let protected = members["protected"]?.stringValue,
              let payload = members["payload"]?.stringValue, let signature = members["signature"]?.stringValue else {
            return XCTFail("not a flattened JWS")
        }
        XCTAssertTrue(key.publicKey.isValidSignature(
            try XCTUnwrap(Base64URL.decode(signature)), for: Array((protected + "." + payload).utf8)))
        // POST-as-GET: an empty payload, not "e30".
        let asGet = try JWSFlattened.sign(protected: [:], payload: nil, key: .es256(key))
        XCTAssertEqual(asGet.objectValue?["payload"], .string(""))
    }

    func testBadNonceIsRetriedWithTheFreshNonce() throws {
        let ca = ScriptedCA.standard()
        let badNonce = ScriptedCA.json(400, #"{"type":"urn:ietf:params:acme:error:badNonce","detail":"stale"}"#,
                                       [("Replay-Nonce", "ZnJlc2g")])
        ca.on("/account", badNonce, badNonce,
              ScriptedCA.json(201, #"{"status":"valid"}"#, [("Location", ScriptedCA.base + "/acct/1")]))
        let acme = try client(ca)
        var refused = 0
        acme.onBadNonce = { _ in refused += 1 }
        try acme.register(contact: nil, binding: nil)
        XCTAssertEqual(refused, 2)
        let third = try decodeJWS(ca.sent.filter { $0.method == "POST" }[2].body)
        XCTAssertEqual(third.header["nonce"] as? String, "ZnJlc2g")
    }

    func testEndlessBadNonceGivesUpWithTheProblem() throws {
        let ca = ScriptedCA.standard()
        ca.on("/account", ScriptedCA.json(400, #"{"type":"urn:ietf:params:acme:error:badNonce"}"#))
        let acme = try client(ca)
        XCTAssertThrowsError(try acme.register(contact: nil, binding: nil)) { error in
            XCTAssertEqual((error as? ACMEError)?.kind, .problem("badNonce"))
        }
        XCTAssertEqual(ca.sent.filter { $0.method == "POST" }.count, ACMEClient.badNonceRetries + 1)
    }

    func testRateLimitCarriesRetryAfter() throws {
        let ca = ScriptedCA.standard()
        ca.on("/account", ScriptedCA.json(429, #"{"type":"urn:ietf:params:acme:error:rateLimited","detail":"slow down"}"#,
                                          [("Retry-After", "120")]))
        XCTAssertThrowsError(try client(ca).register(contact: nil, binding: nil)) { error in
            let acme = error as? ACMEError
            XCTAssertEqual(acme?.kind, .problem("rateLimited"))
            XCTAssertEqual(acme?.retryAfterSeconds, 120)
            XCTAssertTrue(acme?.message.contains("slow down") == true)
        }
    }

    func testExternalAccountBindingIsRequiredWhenTheCASaysSo() throws {
        let ca = ScriptedCA.standard()
        ca.on("/dir", ScriptedCA.json(200, """
            {"newNonce":"\(ScriptedCA.base)/nonce","newAccount":"\(ScriptedCA.base)/account",
             "newOrder":"\(ScriptedCA.base)/order","meta":{"externalAccountRequired":true}}
            """))
        XCTAssertThrowsError(try client(ca).register(contact: nil, binding: nil)) { error in
            XCTAssertTrue("\(error)".contains("eab_kid"))
        }
        let acme = try client(ca)
        try acme.register(contact: nil, binding: ExternalAccountBinding(keyID: "kid-1", macKey: Array(repeating: 7, count: 32)))
        let payload = try decodeJWS(ca.sent.last!.body).payload
        let eab = try XCTUnwrap(
            (JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["externalAccountBinding"] as? [String: String])
        let eabHeader = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(eab["protected"])))
        let header = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(eabHeader)) as? [String: String])
        XCTAssertEqual(header["alg"], "HS256")
        XCTAssertEqual(header["kid"], "kid-1")
        let expected = HMACSHA256.authenticate(key: Array(repeating: 7, count: 32),
                                               message: Array((eab["protected"]! + "." + eab["payload"]!).utf8))
        XCTAssertEqual(Base64URL.decode(eab["signature"]!), expected)
    }

    func testKeyAuthorizationIsTokenDotThumbprint() throws {
        // RFC 7638 §3.1's example key and thumbprint.
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        let key = try RSAPublicKey(jwkModulus: n, jwkExponent: "AQAB")
        let canonical = #"{"e":"AQAB","kty":"RSA","n":"\#(key.jwkModulus)"}"#
        XCTAssertEqual(Base64URL.encode(SHA256.hash(Array(canonical.utf8))), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        let p256 = try P256PrivateKey.generate()
        let acme = ACMEClient(directoryURL: ACMEURL("https://ca.test/dir")!, accountKey: .es256(p256), transport: ScriptedCA())
        XCTAssertEqual(acme.keyAuthorization(token: "tok"), "tok." + JWSSigningKey.es256(p256).thumbprint)
    }
}
