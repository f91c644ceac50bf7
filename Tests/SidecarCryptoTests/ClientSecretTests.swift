import Foundation
import Synchronization
import XCTest
@testable import SidecarCrypto

final class ClientSecretTests: XCTestCase {
    /// Verifies the minted client secret with Python `cryptography`, an independent implementation.
    private static let pythonVerifier = #"""
import base64, json, sys
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
pem, token, now = sys.argv[1].encode(), sys.argv[2], int(sys.argv[3])
def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
h, p, s = token.split(".")
header, claims, sig = json.loads(b64(h)), json.loads(b64(p)), b64(s)
assert header == {"alg": "ES256", "kid": "XYZ123ABCD"}, header
assert claims["iss"] == "ABCDE12345" and claims["sub"] == "com.example.web", claims
assert claims["aud"] == "https://appleid.apple.com" and claims["iat"] == now, claims
assert claims["exp"] - claims["iat"] == 3600, claims
assert len(sig) == 64, len(sig)
der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
key = serialization.load_pem_public_key(pem)
key.verify(der, (h + "." + p).encode(), ec.ECDSA(hashes.SHA256()))
print("OK")
"""#

    func testClientSecretVerifiesWithPythonCryptography() throws {
        let key = try P256PrivateKey.generate()
        let now: Int64 = 1_700_000_000
        let secret = try AppleClientSecret.mint(teamID: "ABCDE12345", clientID: "com.example.web", keyID: "XYZ123ABCD",
                                                key: key, audience: "https://appleid.apple.com", issuedAt: now, lifetime: 3600)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.pythonVerifier, try key.publicKey.spkiPEM(), secret, String(now)]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, stderr)
        XCTAssertEqual(stdout, "OK\n")

        // Our own verifier agrees.
        let resolver = StaticKeys(key: .p256(key.publicKey))
        XCTAssertNoThrow(try JWSVerifier(allowedAlgorithms: [.es256]).verify(secret, keys: resolver))
    }

    func testLifetimeLimit() throws {
        let key = try P256PrivateKey.generate()
        XCTAssertThrowsError(try AppleClientSecret.mint(teamID: "T", clientID: "C", keyID: "K", key: key, audience: "A",
                                                        issuedAt: 0, lifetime: 15_777_001)) {
            XCTAssertEqual($0 as? AppleClientSecret.Error, .lifetimeOutOfRange)
        }
        XCTAssertNoThrow(try AppleClientSecret.mint(teamID: "T", clientID: "C", keyID: "K", key: key, audience: "A",
                                                    issuedAt: 0, lifetime: 15_777_000))
    }

    func testProviderCachesAndRemintsBeforeExpiry() throws {
        let clock = Mutex<Int64>(1_000)
        let key = try P256PrivateKey.generate()
        let provider = try ClientSecretProvider(teamID: "T", keyID: "K", key: key,
                                                audience: "https://appleid.apple.com", lifetime: 3600,
                                                clock: { clock.withLock { $0 } })
        let first = try provider.secret(forClientID: "com.example.web")
        clock.withLock { $0 = 1_000 + 3600 - 301 }
        XCTAssertEqual(try provider.secret(forClientID: "com.example.web"), first)
        XCTAssertNotEqual(try provider.secret(forClientID: "com.example.app"), first, "per client id")
        clock.withLock { $0 = 1_000 + 3600 - 300 }
        let renewed = try provider.secret(forClientID: "com.example.web")
        XCTAssertNotEqual(renewed, first)
        let claims = try JWSVerifier(allowedAlgorithms: [.es256]).verify(renewed, keys: StaticKeys(key: .p256(key.publicKey))).claims
        XCTAssertEqual(claims.integer("iat"), 1_000 + 3600 - 300)
    }
}

private struct StaticKeys: JWSKeyResolver {
    let key: JWSVerificationKey?
    func verificationKey(forKeyID keyID: String) -> JWSVerificationKey? { key }
}
