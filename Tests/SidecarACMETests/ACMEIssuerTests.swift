import SidecarCrypto
import XCTest

@testable import SidecarACME

/// The issuer's path through an order, against a scripted CA: challenges presented and
/// withdrawn, refusals carried to the log's words, and a certificate that is not for the
/// requested key never accepted.
final class ACMEIssuerTests: XCTestCase {
    final class RecordingSolver: ChallengeSolver {
        let challengeType = "http-01"
        var presented: [(String, String, String)] = []
        var withdrawn: [String] = []
        func present(domain: String, token: String, keyAuthorization: String) throws(ACMEError) {
            presented.append((domain, token, keyAuthorization))
        }
        func withdraw(domain: String, token: String) { withdrawn.append(token) }
    }

    static let token = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA"
    let base = ScriptedCA.base

    private func scripted(authorization: String, orderAfter: String) -> ScriptedCA {
        let ca = ScriptedCA.standard()
        ca.on("/order", ScriptedCA.json(201, """
            {"status":"pending","authorizations":["\(base)/authz/1"],"finalize":"\(base)/fin"}
            """, [("Location", base + "/order/1")]))
        ca.on("/authz/1", ScriptedCA.json(200, """
            {"status":"pending","identifier":{"type":"dns","value":"app.example.com"},
             "challenges":[{"type":"http-01","url":"\(base)/chall/1","token":"\(Self.token)","status":"pending"}]}
            """), ScriptedCA.json(200, authorization))
        ca.on("/chall/1", ScriptedCA.json(200, #"{"status":"processing"}"#))
        ca.on("/order/1", ScriptedCA.json(200, orderAfter))
        return ca
    }

    private func issue(_ ca: ScriptedCA, solver: RecordingSolver) throws -> ACMEIssuer.Issued {
        let client = ACMEClient(directoryURL: ACMEURL(base + "/dir")!, accountKey: .es256(try P256PrivateKey.generate()),
                                transport: ca)
        var slept: [Int64] = []
        let issuer = ACMEIssuer(client: client, solver: solver) { slept.append($0) }
        return try issuer.issue(domains: ["app.example.com"], keyType: .ecdsa, email: nil, binding: nil, replaces: nil,
                                now: { 0 })
    }

    func testAFailedChallengeIsReportedWithTheCAsReasonAndWithdrawn() throws {
        let ca = scripted(authorization: """
            {"status":"invalid","identifier":{"type":"dns","value":"app.example.com"},
             "challenges":[{"type":"http-01","url":"\(base)/chall/1","token":"\(Self.token)","status":"invalid",
               "error":{"type":"urn:ietf:params:acme:error:connection","detail":"Connection refused"}}]}
            """, orderAfter: "{}")
        let solver = RecordingSolver()
        XCTAssertThrowsError(try issue(ca, solver: solver)) { error in
            XCTAssertTrue("\(error)".contains("http-01 for app.example.com failed: connection: Connection refused"), "\(error)")
        }
        XCTAssertEqual(solver.presented.first?.1, Self.token)
        XCTAssertTrue(solver.presented.first?.2.hasPrefix(Self.token + ".") == true)
        XCTAssertEqual(solver.withdrawn, [Self.token])
    }

    func testACertificateForAnotherKeyIsRefused() throws {
        let foreignKey = try CertificateKeyType.ecdsa.generatePEM()
        let foreign = try SelfSignedCertificate.pem(domain: "app.example.com", keyPEM: foreignKey, days: 1)
        let ca = scripted(authorization: """
            {"status":"valid","identifier":{"type":"dns","value":"app.example.com"},"challenges":[]}
            """, orderAfter: """
            {"status":"ready","authorizations":["\(base)/authz/1"],"finalize":"\(base)/fin"}
            """)
        ca.on("/fin", ScriptedCA.json(200, """
            {"status":"valid","authorizations":[],"finalize":"\(base)/fin","certificate":"\(base)/cert/1"}
            """))
        ca.on("/cert/1", ScriptedCA.json(200, foreign))
        XCTAssertThrowsError(try issue(ca, solver: RecordingSolver())) { error in
            XCTAssertTrue("\(error)".contains("not for the key of the request"), "\(error)")
        }
        // The CSR went out: DER, base64url, in the finalize request.
        XCTAssertTrue(ca.sent.contains { $0.url == base + "/fin" })
    }

    func testAnOrderTheCAInvalidatesEndsWithItsProblem() throws {
        let ca = scripted(authorization: """
            {"status":"valid","identifier":{"type":"dns","value":"app.example.com"},"challenges":[]}
            """, orderAfter: """
            {"status":"invalid","authorizations":[],"finalize":"\(base)/fin",
             "error":{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"policy forbids"}}
            """)
        XCTAssertThrowsError(try issue(ca, solver: RecordingSolver())) { error in
            XCTAssertTrue("\(error)".contains("rejectedIdentifier: policy forbids"), "\(error)")
        }
    }

    func testNoChallengeOfTheConfiguredKind() throws {
        let ca = scripted(authorization: "{}", orderAfter: "{}")
        ca.on("/authz/1", ScriptedCA.json(200, """
            {"status":"pending","identifier":{"type":"dns","value":"app.example.com"},
             "challenges":[{"type":"dns-01","url":"\(base)/chall/9","token":"\(Self.token)"}]}
            """))
        XCTAssertThrowsError(try issue(ca, solver: RecordingSolver())) { error in
            XCTAssertTrue("\(error)".contains("offers no http-01 challenge"), "\(error)")
        }
    }

    func testRenewalInfoIsAskedAtTheCertificatesID() throws {
        let ca = ScriptedCA.standard()
        ca.on("/dir", ScriptedCA.json(200, """
            {"newNonce":"\(base)/nonce","newAccount":"\(base)/account","newOrder":"\(base)/order",
             "renewalInfo":"\(base)/ari"}
            """))
        ca.on("/ari/aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE", ScriptedCA.json(200, """
            {"suggestedWindow":{"start":"2030-01-01T00:00:00Z","end":"2030-01-02T00:00:00Z"}}
            """, [("Retry-After", "21600")]))
        let client = ACMEClient(directoryURL: ACMEURL(base + "/dir")!, accountKey: .es256(try P256PrivateKey.generate()),
                                transport: ca)
        let answer = try XCTUnwrap(try client.renewalWindow(certificateID: "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"))
        XCTAssertEqual(answer.window.start.timeIntervalSince1970, 1_893_456_000)
        XCTAssertEqual(answer.retryAfter, 21600)
        // No ARI at the CA: no window, no request.
        let plain = ScriptedCA.standard()
        let none = try ACMEClient(directoryURL: ACMEURL(base + "/dir")!, accountKey: .es256(try P256PrivateKey.generate()),
                                  transport: plain).renewalWindow(certificateID: "x.y")
        XCTAssertNil(none)
    }
}
