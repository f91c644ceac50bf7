import COpenSSL

/// What a PEM private key is — algorithm and, for EC, curve — so that a refusal can tell the
/// operator what they supplied ("an RSA key") rather than only what was expected. Describes
/// the key's type, never its material.
public enum PrivateKeyKind: Equatable, Sendable, CustomStringConvertible {
    /// An EC key; `curve` is the NIST name where there is one (`P-256`, `P-384`, `P-521`),
    /// otherwise OpenSSL's group name (e.g. `secp256k1`).
    case ec(curve: String)
    case rsa
    /// Any other algorithm, by OpenSSL's type name (e.g. `ED25519`, `DSA`).
    case other(String)

    /// Reads the key the way `P256PrivateKey(pem:)` does, without requiring P-256.
    public init(pem: some Collection<UInt8>) throws(CryptoError) {
        self.init(try EVPKey.privateKey(pem: pem))
    }

    init(_ key: EVPKey) {
        switch EVP_PKEY_get_id(key.pointer) {
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key.pointer, &name, name.count, &length) == 1 else {
                self = .ec(curve: "an unnamed curve")
                return
            }
            let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            self = .ec(curve: Self.nistNames[group] ?? group)
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS:
            self = .rsa
        default:
            self = .other(EVP_PKEY_get0_type_name(key.pointer).map { String(cString: $0) } ?? "unknown")
        }
    }

    /// OpenSSL's group names for the NIST curves people know by their FIPS names.
    private static let nistNames = [
        "prime256v1": "P-256", "P-256": "P-256", "secp384r1": "P-384", "P-384": "P-384",
        "secp521r1": "P-521", "P-521": "P-521",
    ]

    public var isP256: Bool { self == .ec(curve: "P-256") }

    /// With its article, to follow "is": `an RSA key`, `a P-384 key`, `a key of type ED25519`.
    public var description: String {
        switch self {
        case .ec(let curve) where curve.hasPrefix("P-"): "a \(curve) key"
        case .ec(let curve): "an EC key on \(curve)"
        case .rsa: "an RSA key"
        case .other(let name): "a key of type \(name)"
        }
    }
}
