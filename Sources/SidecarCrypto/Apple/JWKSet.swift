import Foundation

/// A set of RS256 verification keys from a JWKS document (Apple's `/auth/keys`).
public struct JWKSet: Sendable, JWSKeyResolver {
    public enum ParseError: Error, Equatable, Sendable {
        case notAJWKS
        case noUsableKeys
    }

    private let keys: [String: RSAPublicKey]

    /// The key ids present, sorted.
    public var keyIDs: [String] { keys.keys.sorted() }

    public init(keys: [String: RSAPublicKey]) { self.keys = keys }

    /// Parses a JWKS document. Keys that are not RSA, not for signatures (`use` other than `sig`),
    /// declared for an algorithm other than RS256, without a `kid`, or with unusable `n`/`e` are
    /// skipped; unknown members are ignored. A kid that appears twice is dropped entirely, so the
    /// result does not depend on key order. A set left without keys is an error, so that a
    /// broken fetch never replaces a good set.
    public init(json: some Collection<UInt8>) throws(ParseError) {
        guard let document = try? JSONDecoder().decode(JSONValue.self, from: Data(json)),
              case .array(let entries)? = document.objectValue?["keys"]
        else { throw .notAJWKS }
        var keys = [String: RSAPublicKey]()
        var duplicates = Set<String>()
        for entry in entries {
            guard let jwk = entry.objectValue, jwk["kty"]?.stringValue == "RSA",
                  jwk["use"] == nil || jwk["use"]?.stringValue == "sig",
                  jwk["alg"] == nil || jwk["alg"]?.stringValue == JWSAlgorithm.rs256.rawValue,
                  let kid = jwk["kid"]?.stringValue, !kid.isEmpty,
                  let n = jwk["n"]?.stringValue, let e = jwk["e"]?.stringValue,
                  let key = try? RSAPublicKey(jwkModulus: n, jwkExponent: e)
            else { continue }
            if keys[kid] != nil { duplicates.insert(kid) }
            keys[kid] = key
        }
        for kid in duplicates { keys[kid] = nil }
        guard !keys.isEmpty else { throw .noUsableKeys }
        self.keys = keys
    }

    public func verificationKey(forKeyID keyID: String) -> JWSVerificationKey? {
        keys[keyID].map { .rsa($0) }
    }

    /// The JWKS JSON for these keys (`kty`, `use`, `alg`, `kid`, `n`, `e`) — what the emulator serves.
    public var jsonText: String {
        let entries: [JSONValue] = keyIDs.compactMap { kid in
            guard let key = keys[kid] else { return nil }
            return .object([
                "kty": .string("RSA"), "use": .string("sig"), "alg": .string("RS256"), "kid": .string(kid),
                "n": .string(key.jwkModulus), "e": .string(key.jwkExponent),
            ])
        }
        return JSONValue.object(["keys": .array(entries)]).jsonText
    }
}
