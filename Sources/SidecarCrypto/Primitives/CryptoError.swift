/// Failures of the cryptographic primitives. Verification failures are not errors: verify
/// functions return `false` instead.
public enum CryptoError: Error, Equatable, Sendable {
    /// Key material could not be parsed or has the wrong type, curve or size.
    case invalidKey(String)
    /// An argument is outside what the primitive accepts (e.g. an empty IV, an oversized HKDF output).
    case invalidArgument(String)
    /// AEAD authentication failed: wrong key, nonce, associated data, or tampered data.
    case authenticationFailed
    /// OpenSSL reported an internal failure in the named operation.
    case openSSL(String)
}
