import Foundation

/// A JWS whose signature has been verified; the claims are not yet validated (see `JWTClaims`).
public struct VerifiedJWT: Sendable {
    public let algorithm: JWSAlgorithm
    public let keyID: String
    public let header: [String: JSONValue]
    public let claims: JWTClaims
}

/// Strict compact-JWS verification.
///
/// Order of checks: size, exactly three strict-base64url segments, header JSON object, `alg`
/// in the caller's allowed set, no `crit`, `kid` present, key looked up by `kid` only, signature,
/// and only then the payload is parsed as a JSON object.
public struct JWSVerifier: Sendable {
    public static let defaultMaximumByteCount = 16 * 1024
    public let allowedAlgorithms: Set<JWSAlgorithm>
    public let maximumByteCount: Int

    public init(allowedAlgorithms: Set<JWSAlgorithm>, maximumByteCount: Int = defaultMaximumByteCount) {
        self.allowedAlgorithms = allowedAlgorithms
        self.maximumByteCount = maximumByteCount
    }

    public func verify(_ token: String, keys: some JWSKeyResolver) throws(JWTError) -> VerifiedJWT {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumByteCount else { throw .tooLarge }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw .malformed("expected 3 segments") }
        guard let headerBytes = Base64URL.decode(bytes: segments[0]) else { throw .malformed("header encoding") }
        let header = try Self.jsonObject(headerBytes, what: "header")

        guard let name = header["alg"]?.stringValue, let algorithm = JWSAlgorithm(rawValue: name),
              allowedAlgorithms.contains(algorithm)
        else { throw .algorithmNotAllowed }
        guard header["crit"] == nil else { throw .critHeader }
        guard let keyID = header["kid"]?.stringValue, !keyID.isEmpty else { throw .missingKeyID }

        guard let payload = Base64URL.decode(bytes: segments[1]) else { throw .malformed("payload encoding") }
        guard let signature = Base64URL.decode(bytes: segments[2]) else { throw .malformed("signature encoding") }
        guard let key = keys.verificationKey(forKeyID: keyID) else { throw .unknownKey }
        guard key.verifies(algorithm) else { throw .keyTypeMismatch }
        let signingInput = bytes[..<(segments[1].endIndex)]
        guard key.isValidSignature(signature, for: signingInput) else { throw .badSignature }

        let claims = try Self.jsonObject(payload, what: "payload")
        return VerifiedJWT(algorithm: algorithm, keyID: keyID, header: header, claims: JWTClaims(claims))
    }

    static func jsonObject(_ bytes: [UInt8], what: String) throws(JWTError) -> [String: JSONValue] {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)),
              case .object(let object) = value
        else { throw .malformed("\(what) is not a JSON object") }
        return object
    }
}
