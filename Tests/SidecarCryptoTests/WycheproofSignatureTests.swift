import XCTest
@testable import SidecarCrypto

final class WycheproofSignatureTests: XCTestCase {
    private struct SignatureCase: Decodable {
        let tcId: Int, comment: String, msg: String, sig: String, result: WycheproofResult, flags: [String]
    }
    private struct ECDSAGroup: Decodable {
        struct Key: Decodable { let uncompressed: String }
        let publicKey: Key
        let tests: [SignatureCase]
    }
    private struct RSAGroup: Decodable {
        struct Key: Decodable { let modulus: String, publicExponent: String }
        let publicKey: Key
        let tests: [SignatureCase]
    }

    /// ES256 verification with JOSE (P1363, raw r‖s) signatures. The file has no "acceptable" cases;
    /// were one added, it would be required to verify (our verifier is the strict side).
    func testECDSAP256SHA256P1363() throws {
        let file = try Wycheproof.load("ecdsa_secp256r1_sha256_p1363_test.json", as: WycheproofFile<ECDSAGroup>.self)
        var run = 0
        for group in file.testGroups {
            let point = try Wycheproof.bytes(group.publicKey.uncompressed)
            guard let key = try? P256PublicKey(uncompressedPoint: point) else {
                // A public key we refuse to load: every case in its group must then be invalid.
                XCTAssertTrue(group.tests.allSatisfy { $0.result != .valid }, "refused a valid key \(group.publicKey)")
                run += group.tests.count
                continue
            }
            for test in group.tests {
                let ok = key.isValidSignature(try Wycheproof.bytes(test.sig), for: try Wycheproof.bytes(test.msg))
                XCTAssertEqual(ok, test.result != .invalid, "tcId \(test.tcId) \(test.comment) \(test.flags)")
                run += 1
            }
        }
        XCTAssertGreaterThan(run, 0)
        XCTAssertEqual(run, file.numberOfTests)
    }

    /// RS256 over 2048/3072/4096-bit keys (all sizes the product accepts, see `RSAPublicKey`).
    /// "acceptable" here is only the MissingNull case (a DigestInfo without the NULL parameter):
    /// we require it to be REJECTED — the strict, unambiguous encoding is the only one we accept.
    func testRSAPKCS1SHA256() throws {
        for bits in [2048, 3072, 4096] {
            let file = try Wycheproof.load("rsa_signature_\(bits)_sha256_test.json", as: WycheproofFile<RSAGroup>.self)
            var run = 0
            for group in file.testGroups {
                let key = try RSAPublicKey(modulus: try Wycheproof.bytes(group.publicKey.modulus),
                                           exponent: try Wycheproof.bytes(group.publicKey.publicExponent))
                for test in group.tests {
                    let ok = key.isValidSignature(try Wycheproof.bytes(test.sig), for: try Wycheproof.bytes(test.msg))
                    XCTAssertEqual(ok, test.result == .valid, "\(bits) tcId \(test.tcId) \(test.comment) \(test.flags)")
                    run += 1
                }
            }
            XCTAssertGreaterThan(run, 0)
            XCTAssertEqual(run, file.numberOfTests, "\(bits)")
        }
    }
}
