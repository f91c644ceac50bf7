import XCTest
@testable import SidecarCrypto

/// Shared test keys (RSA generation is slow enough to do once).
enum TestKeys {
    static let apple: RSAPrivateKey = {
        do { return try RSAPrivateKey.generate() } catch { fatalError("test key generation failed: \(error)") }
    }()
    static let appleKeyID = "W6WcOKB"
    static var appleKeySet: JWKSet { JWKSet(keys: [appleKeyID: apple.publicKey]) }
}

/// Builds tokens by hand, including malformed ones.
enum TokenFactory {
    static func encode(_ value: JSONValue) -> String { Base64URL.encode(Array(value.jsonText.utf8)) }

    static func signRS256(header: [String: JSONValue], claims: [String: JSONValue],
                          key: RSAPrivateKey = TestKeys.apple) throws -> String {
        let input = encode(.object(header)) + "." + encode(.object(claims))
        return input + "." + Base64URL.encode(try key.sign(Array(input.utf8)))
    }

    static func signRS256(header: [String: JSONValue], rawPayload: String) throws -> String {
        let input = encode(.object(header)) + "." + Base64URL.encode(Array(rawPayload.utf8))
        return input + "." + Base64URL.encode(try TestKeys.apple.sign(Array(input.utf8)))
    }

    static let appleHeader: [String: JSONValue] = ["alg": .string("RS256"), "kid": .string(TestKeys.appleKeyID)]
}
