import SidecarCrypto

/// The Apple key (`apple.private_key_file` or `apple.private_key`) is parsed here, while the
/// configuration is read, with the very constructor the sign-in flow signs with
/// (`P256PrivateKey(pem:)`). `sidecar check` and `sidecar run` both load the configuration, so
/// a key that cannot sign client secrets fails both, in the same words, at the key's line and
/// column — not only later, when `run` builds its signer.
///
/// The assertion key (`assertion.private_key_file`) goes through the same check with its own
/// wording: both must be unencrypted P-256 PEM keys.
enum AppleSigningKey {
    /// What the key signs, for the messages.
    enum Purpose {
        case appleClientSecret, assertion

        var example: String {
            switch self {
            case .appleClientSecret: "as in Apple's AuthKey_<key id>.p8"
            case .assertion: "e.g. from openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256"
            }
        }

        var need: String {
            switch self {
            case .appleClientSecret: "Apple client secrets need a P-256 (ES256) key"
            case .assertion: "the identity assertion is signed with ES256 and needs a P-256 key"
            }
        }
    }

    /// `name` is how the operator wrote the key's location (`AuthKey.p8`, `env:APPLE_KEY`).
    static func check(_ key: Secret, named name: String, for purpose: Purpose = .appleClientSecret) -> Result<Secret, ValueError> {
        // Traditional ("Proc-Type: 4,ENCRYPTED") or PKCS#8 ("ENCRYPTED PRIVATE KEY") encryption.
        if ["-----BEGIN ENCRYPTED PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED"].contains(where: key.string.contains) {
            return .failure(ValueError(
                "\(name) is password-protected; the sidecar needs it unencrypted"
                    + (purpose == .appleClientSecret ? ", as Apple's AuthKey_<key id>.p8 is" : "")))
        }
        guard looksLikePEM(key) else {
            return .failure(ValueError(
                "\(name) is not a PEM private key (expected -----BEGIN PRIVATE KEY-----, \(purpose.example))"))
        }
        do {
            _ = try P256PrivateKey(pem: key.bytes)
            return .success(key)
        } catch {
            // Say what the key is: an RSA or P-384 key is a plausible mix-up (another
            // service's key, a TLS key) and naming it points straight at the fix.
            guard let kind = try? PrivateKeyKind(pem: key.bytes) else {
                return .failure(ValueError(
                    "\(name) cannot be read as a private key (damaged or truncated?); "
                        + (purpose == .appleClientSecret ? "use the .p8 file downloaded from Apple as it is" : "use a P-256 PEM key")))
            }
            return .failure(ValueError(
                "\(name) is \(kind); \(purpose.need)"))
        }
    }

    /// A PEM block of some private key (`PRIVATE KEY` as in Apple's PKCS#8 `.p8`, or a
    /// traditional `EC`/`RSA PRIVATE KEY`). Only a pre-filter, so that a file that is no key at
    /// all gets the plainest message; the parse above decides.
    private static func looksLikePEM(_ key: Secret) -> Bool {
        let text = key.string
        return text.contains("-----BEGIN ") && text.contains("PRIVATE KEY-----")
    }
}
