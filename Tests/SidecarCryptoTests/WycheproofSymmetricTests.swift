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

    /// The session opener's keyed context (the nonce set as RFC 5288's fixed and invocation
    /// fields, one context reused for every message under its key) on every 96-bit-IV case:
    /// valid ones open to the message, the others fail with the body zeroed; a failure must
    /// not disturb the next message opened with the same context.
    func testAESGCMKeyedContextReusedAcrossMessages() throws {
        let file = try Wycheproof.load("aes_gcm_test.json", as: WycheproofFile<AEADGroup>.self)
        var run = 0, refused = 0, reused = 0
        var contexts: [[UInt8]: AESGCMKeyedContext] = [:]
        for group in file.testGroups where group.ivSize == 96 {
            for test in group.tests {
                let key = try Wycheproof.bytes(test.key), iv = try Wycheproof.bytes(test.iv)
                let aad = try Wycheproof.bytes(test.aad), msg = try Wycheproof.bytes(test.msg)
                let ct = try Wycheproof.bytes(test.ct), tag = try Wycheproof.bytes(test.tag)
                guard tag.count == AESGCM.tagByteCount else { continue }
                if contexts[key] != nil { reused += 1 }
                let context = try contexts[key] ?? key.withUnsafeBufferPointer { try AESGCMKeyedContext(key: $0) }
                contexts[key] = context
                // The associated data split in two, as the opener passes a header and a context.
                let split = aad.count / 2
                var body = ct
                let outcome: Result<Void, CryptoError>
                do {
                    try Self.open(context, nonce: iv, aad: aad, split: split, body: &body, tag: tag)
                    outcome = .success(())
                } catch {
                    outcome = .failure(error)
                }
                switch (outcome, test.result) {
                case (.success, .valid):
                    XCTAssertEqual(body, msg, "tcId \(test.tcId) \(test.comment)")
                case (.failure(let error), .invalid):
                    XCTAssertEqual(error, .authenticationFailed, "tcId \(test.tcId)")
                    XCTAssertTrue(body.allSatisfy { $0 == 0 }, "tcId \(test.tcId): unauthenticated plaintext left")
                    refused += 1
                default:
                    XCTFail("tcId \(test.tcId) \(test.comment): \(outcome) for a \(test.result) case")
                }
                run += 1
            }
        }
        XCTAssertGreaterThan(run, 100)
        XCTAssertGreaterThan(refused, 10)
        XCTAssertGreaterThan(reused, 50, "contexts are reused across messages of the same key")
    }

    private static func open(
        _ context: AESGCMKeyedContext, nonce: [UInt8], aad: [UInt8], split: Int, body: inout [UInt8], tag: [UInt8]
    ) throws(CryptoError) {
        try nonce.withUnsafeBufferPointer { nonce throws(CryptoError) in
            try aad.withUnsafeBufferPointer { aad throws(CryptoError) in
                try tag.withUnsafeBufferPointer { tag throws(CryptoError) in
                    try body.withUnsafeMutableBufferPointer { body throws(CryptoError) in
                        try context.open(
                            nonce: nonce, aad: UnsafeBufferPointer(rebasing: aad[..<split]),
                            aadSuffix: UnsafeBufferPointer(rebasing: aad[split...]), body: body, tag: tag)
                    }
                }
            }
        }
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
