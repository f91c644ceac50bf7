import XCTest
@testable import SidecarCrypto

final class WycheproofSymmetricTests: XCTestCase {
    private struct MACGroup: Decodable {
        struct Case: Decodable { let tcId: Int, key: String, msg: String, tag: String, result: WycheproofResult }
        let tagSize: Int
        let tests: [Case]
    }
    private struct AEADGroup: Decodable {
        struct Case: Decodable {
            let tcId: Int, comment: String, key: String, iv: String, aad: String, msg: String, ct: String, tag: String
            let result: WycheproofResult
        }
        let keySize: Int, ivSize: Int, tagSize: Int
        let tests: [Case]
    }
    private struct HKDFGroup: Decodable {
        struct Case: Decodable {
            let tcId: Int, ikm: String, salt: String, info: String, size: Int, okm: String, result: WycheproofResult
        }
        let tests: [Case]
    }

    /// HMAC-SHA256 including the 128-bit truncated-tag groups. No "acceptable" cases exist.
    func testHMACSHA256() throws {
        let file = try Wycheproof.load("hmac_sha256_test.json", as: WycheproofFile<MACGroup>.self)
        var run = 0
        for group in file.testGroups {
            for test in group.tests {
                let key = try Wycheproof.bytes(test.key), msg = try Wycheproof.bytes(test.msg)
                let tag = try Wycheproof.bytes(test.tag)
                XCTAssertEqual(HMACSHA256.isValid(tag: tag, key: key, message: msg), test.result == .valid,
                               "tcId \(test.tcId)")
                if test.result == .valid {
                    XCTAssertEqual(Array(HMACSHA256.authenticate(key: key, message: msg).prefix(group.tagSize / 8)), tag)
                }
                run += 1
            }
        }
        XCTAssertGreaterThan(run, 0)
        XCTAssertEqual(run, file.numberOfTests)
    }

    /// AES-GCM with all key sizes in the file (128, 192, 256 — our AES-GCM supports them all) and
    /// every IV length up to 128 bytes; the zero-length IV cases are invalid and must be refused.
    /// IVs longer than 128 bytes exceed OpenSSL 3's GCM limit: our API refuses them with
    /// `.invalidArgument`, which the test asserts instead of the ciphertext. No "acceptable" cases.
    func testAESGCM() throws {
        let file = try Wycheproof.load("aes_gcm_test.json", as: WycheproofFile<AEADGroup>.self)
        var run = 0, refusedLongIV = 0
        for group in file.testGroups {
            XCTAssertEqual(group.tagSize, 128)
            for test in group.tests {
                let key = try Wycheproof.bytes(test.key), iv = try Wycheproof.bytes(test.iv)
                let aad = try Wycheproof.bytes(test.aad), msg = try Wycheproof.bytes(test.msg)
                let ct = try Wycheproof.bytes(test.ct), tag = try Wycheproof.bytes(test.tag)
                if iv.count > AESGCM.maximumNonceByteCount {
                    XCTAssertThrowsError(try AESGCM.seal(key: key, nonce: iv, plaintext: msg, aad: aad)) {
                        XCTAssertEqual($0 as? CryptoError, .invalidArgument("AES-GCM nonce length"))
                    }
                    refusedLongIV += 1
                    run += 1
                    continue
                }
                let opened = try? AESGCM.open(key: key, nonce: iv, ciphertext: ct, tag: tag, aad: aad)
                if test.result == .valid {
                    XCTAssertEqual(opened, msg, "open tcId \(test.tcId) \(test.comment)")
                    let sealed = try? AESGCM.seal(key: key, nonce: iv, plaintext: msg, aad: aad)
                    XCTAssertEqual(sealed?.ciphertext, ct, "seal tcId \(test.tcId)")
                    XCTAssertEqual(sealed?.tag, tag, "seal tag tcId \(test.tcId)")
                } else {
                    XCTAssertNil(opened, "tcId \(test.tcId) \(test.comment)")
                }
                run += 1
            }
        }
        XCTAssertGreaterThan(run - refusedLongIV, 300)
        XCTAssertEqual(run, file.numberOfTests)
    }

    /// HKDF-SHA256; the invalid cases ask for more than 255·32 bytes and must throw.
    func testHKDFSHA256() throws {
        let file = try Wycheproof.load("hkdf_sha256_test.json", as: WycheproofFile<HKDFGroup>.self)
        var run = 0
        for group in file.testGroups {
            for test in group.tests {
                let okm = try? HKDFSHA256.deriveKey(
                    inputKeyMaterial: try Wycheproof.bytes(test.ikm), salt: try Wycheproof.bytes(test.salt),
                    info: try Wycheproof.bytes(test.info), outputByteCount: test.size)
                if test.result == .valid {
                    XCTAssertEqual(okm, try Wycheproof.bytes(test.okm), "tcId \(test.tcId)")
                } else {
                    XCTAssertNil(okm, "tcId \(test.tcId)")
                }
                run += 1
            }
        }
        XCTAssertGreaterThan(run, 0)
        XCTAssertEqual(run, file.numberOfTests)
    }
}
