/// Signs compact JWTs (ES256 client secrets and assertions, RS256 emulator id_tokens).
public enum JWTSigner {
    /// `header` members besides `alg` and `kid` (e.g. `typ`) may be given in `extraHeader`.
    public static func sign(
        claims: [String: JSONValue], keyID: String, key: JWSSigningKey,
        extraHeader: [String: JSONValue] = [:]
    ) throws(CryptoError) -> String {
        var header = extraHeader
        header["alg"] = .string(key.algorithm.rawValue)
        header["kid"] = .string(keyID)
        let signingInput = Base64URL.encode(Array(JSONValue.object(header).jsonText.utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonText.utf8))
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
