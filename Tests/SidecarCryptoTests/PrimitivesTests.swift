import XCTest
@testable import SidecarCrypto

final class PrimitivesTests: XCTestCase {
    func testSHA256KnownAnswer() {
        XCTAssertEqual(SHA256.hexDigest(Array("abc".utf8)),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(SHA256.hexDigest([UInt8]()),
                       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testBase64URLBlocksAgreeWithTheScalarDecoder() {
        func scalar(_ text: [UInt8]) -> [UInt8]? {
            guard let count = Base64URL.decodedCount(text.count) else { return nil }
            var out = [UInt8](repeating: 0, count: count)
            let ok = text.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { Base64Core.decodeGroups(input, into: $0, table: Base64Core.urlTable) }
            }
            return ok ? out : nil
        }
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {  // every tail and block count, random content
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let text = Array(Base64URL.encode(bytes).utf8)
            XCTAssertEqual(Base64URL.decode(bytes: text), bytes, "\(length)")
            XCTAssertEqual(scalar(text), bytes)
        }
        // Every byte value at every position of a 64-character value (four whole blocks):
        // accepted exactly when the scalar decoder accepts it, with the same bytes.
        let base = Array(Base64URL.encode((0..<48).map { UInt8(truncatingIfNeeded: $0 &* 37) }).utf8)
        for position in 0..<base.count {
            for byte in UInt8.min...UInt8.max {
                var text = base
                text[position] = byte
                XCTAssertEqual(Base64URL.decode(bytes: text), scalar(text), "\(position) \(byte)")
            }
        }
    }

    func testBase64URLStrictness() {
        XCTAssertEqual(Base64URL.encode(Array("hello".utf8)), "aGVsbG8")
        XCTAssertEqual(Base64URL.decode("aGVsbG8"), Array("hello".utf8))
        XCTAssertEqual(Base64URL.decode(""), [])
        XCTAssertNil(Base64URL.decode("aGVsbG8="), "padding")
        XCTAssertNil(Base64URL.decode("aGVs bG8"), "whitespace")
        XCTAssertNil(Base64URL.decode("aGVsbG9"), "non-canonical trailing bits")
        XCTAssertNil(Base64URL.decode("aGVsb+8"), "standard alphabet")
        XCTAssertNil(Base64URL.decode("a"), "impossible length")
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
        }
    }

    func testStandardBase64Strictness() {
        XCTAssertEqual(Base64.encode(Array("hi".utf8)), "aGk=")
        XCTAssertEqual(Base64.decode("aGk="), Array("hi".utf8))
        XCTAssertNil(Base64.decode("aGk"), "padding required")
        XCTAssertNil(Base64.decode("aGl="), "non-canonical trailing bits")
        XCTAssertNil(Base64.decode("aG=k"), "padding in the middle")
        XCTAssertNil(Base64.decode("a-k="), "url alphabet")
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        XCTAssertFalse(ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        XCTAssertFalse(ConstantTime.equals([1, 2], [1, 2, 3]))
        XCTAssertTrue(ConstantTime.equals([UInt8](), [UInt8]()))
    }

    func testRandomBytesDiffer() throws {
        let a = try SecureRandom.bytes(32), b = try SecureRandom.bytes(32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
    }

    func testAESGCMRoundTripAndTamper() throws {
        let key = try SecureRandom.bytes(32), nonce = try SecureRandom.bytes(12)
        let sealed = try AESGCM.seal(key: key, nonce: nonce, plaintext: Array("secret".utf8), aad: Array("ad".utf8))
        XCTAssertEqual(try AESGCM.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext, tag: sealed.tag,
                                       aad: Array("ad".utf8)), Array("secret".utf8))
        XCTAssertThrowsError(try AESGCM.open(key: key, nonce: nonce, ciphertext: sealed.ciphertext,
                                             tag: sealed.tag, aad: Array("AD".utf8)))
        XCTAssertThrowsError(try AESGCM.seal(key: key, nonce: [UInt8](), plaintext: [1]))
        XCTAssertThrowsError(try AESGCM.seal(key: [1, 2, 3], nonce: nonce, plaintext: [1]))
    }

    func testRSAGenerateSignVerifyAndJWKRoundTrip() throws {
        let key = try RSAPrivateKey.generate()
        XCTAssertEqual(key.publicKey.byteCount, 256)
        XCTAssertEqual(key.publicKey.jwkExponent, "AQAB")
        let message = Array("payload".utf8)
        let signature = try key.sign(message)
        let imported = try RSAPublicKey(jwkModulus: key.publicKey.jwkModulus, jwkExponent: key.publicKey.jwkExponent)
        XCTAssertTrue(imported.isValidSignature(signature, for: message))
        XCTAssertFalse(imported.isValidSignature(signature, for: Array("other".utf8)))
        XCTAssertFalse(imported.isValidSignature(signature.dropLast(), for: message))
        let pem = try key.pkcs8PEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        XCTAssertEqual(try RSAPrivateKey(pem: Array(pem.utf8)).publicKey.modulus, key.publicKey.modulus)
        XCTAssertThrowsError(try RSAPublicKey(modulus: [UInt8](repeating: 0xff, count: 128), exponent: [1, 0, 1]))
        XCTAssertThrowsError(try RSAPublicKey(modulus: key.publicKey.modulus, exponent: [2]))
    }

    func testP256GenerateSignVerifyAndExport() throws {
        let key = try P256PrivateKey.generate()
        let message = Array("claims".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(key.publicKey.isValidSignature(signature, for: message))
        XCTAssertFalse(key.publicKey.isValidSignature(signature, for: Array("claimz".utf8)))
        XCTAssertFalse(key.publicKey.isValidSignature(signature + [0], for: message))
        let zeroR = [UInt8](repeating: 0, count: 32) + signature[32...]
        XCTAssertFalse(key.publicKey.isValidSignature(zeroR, for: message))
        let orderR = P256.order + signature[32...]
        XCTAssertFalse(key.publicKey.isValidSignature(orderR, for: message))

        let pem = try key.pkcs8PEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try P256PrivateKey(pem: Array(pem.utf8))
        XCTAssertEqual(reloaded.publicKey.uncompressedPoint, key.publicKey.uncompressedPoint)
        let spki = try key.publicKey.spkiPEM()
        XCTAssertTrue(try P256PublicKey(pem: Array(spki.utf8)).isValidSignature(signature, for: message))
        XCTAssertTrue(try P256PublicKey(jwkX: key.publicKey.jwkX, jwkY: key.publicKey.jwkY)
            .isValidSignature(signature, for: message))
        XCTAssertThrowsError(try P256PublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32)))
        XCTAssertThrowsError(try P256PrivateKey(pem: Array("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".utf8)))
        let rsaPEM = try RSAPrivateKey.generate().pkcs8PEM()
        XCTAssertThrowsError(try P256PrivateKey(pem: Array(rsaPEM.utf8)))
    }

    func testHKDFRejectsOversizedOutput() {
        XCTAssertThrowsError(try HKDFSHA256.deriveKey(inputKeyMaterial: [1], salt: [UInt8](), info: [UInt8](),
                                                      outputByteCount: 255 * 32 + 1))
    }
}
