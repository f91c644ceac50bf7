/// Authenticated encryption of small values for cookies and tokens.
///
/// Envelope (then base64url without padding):
/// `version (1) ‖ key id (4) ‖ nonce (12) ‖ AES-256-GCM ciphertext ‖ tag (16)`.
/// Each secret yields, via HKDF-SHA256 with the purpose label, its own 32-byte key and a 4-byte
/// key id, so opening picks the key directly. The associated data is the 5-byte header followed
/// by the caller's context (the cookie name), so a value sealed for one cookie cannot be replayed
/// under another, and values of different purposes never open as one another (different keys).
/// The first secret seals; every secret opens, and opening with a later one signals a reseal.
public struct Sealer: Sendable {
    public static let minimumSecretByteCount = 32
    static let version: UInt8 = 1
    static let headerByteCount = 5
    static let overheadByteCount = headerByteCount + AESGCM.nonceByteCount + AESGCM.tagByteCount

    public enum ConfigurationError: Error, Equatable, Sendable {
        case noSecrets
        /// The secret at this index is shorter than 32 bytes.
        case secretTooShort(index: Int)
        /// Two secrets derive the same key id (the same secret listed twice).
        case duplicateSecret(index: Int)
    }

    struct DerivedKey: Sendable {
        let id: UInt32
        let key: [UInt8]
    }

    let keys: [DerivedKey]
    public let purpose: String

    /// - Parameters:
    ///   - secrets: raw secrets (≥ 32 bytes each); the first one seals.
    ///   - purpose: a label separating kinds of sealed values (e.g. `"session"`).
    public init(secrets: [[UInt8]], purpose: String) throws(ConfigurationError) {
        guard !secrets.isEmpty else { throw .noSecrets }
        var keys = [DerivedKey]()
        for (index, secret) in secrets.enumerated() {
            guard secret.count >= Self.minimumSecretByteCount else { throw .secretTooShort(index: index) }
            let salt = Array("sidecar sealer v1".utf8)
            guard let key = try? HKDFSHA256.deriveKey(inputKeyMaterial: secret, salt: salt,
                                                      info: Array("key \(purpose)".utf8), outputByteCount: 32),
                  let id = try? HKDFSHA256.deriveKey(inputKeyMaterial: secret, salt: salt,
                                                     info: Array("key-id \(purpose)".utf8), outputByteCount: 4)
            else { throw .noSecrets }
            let keyID = id.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard !keys.contains(where: { $0.id == keyID }) else { throw .duplicateSecret(index: index) }
            keys.append(DerivedKey(id: keyID, key: key))
        }
        self.keys = keys
        self.purpose = purpose
    }

    /// Seals `plaintext` bound to `context`; returns base64url text.
    public func seal(_ plaintext: some Collection<UInt8>, context: String) throws(CryptoError) -> String {
        let sealing = keys[0]
        var envelope = [UInt8](repeating: 0, count: Self.overheadByteCount + plaintext.count)
        envelope[0] = Self.version
        for index in 0..<4 { envelope[1 + index] = UInt8(truncatingIfNeeded: sealing.id >> UInt32(24 - 8 * index)) }
        let plaintextStart = Self.headerByteCount + AESGCM.nonceByteCount
        envelope.replaceSubrange(plaintextStart..<(plaintextStart + plaintext.count), with: plaintext)
        try envelope.withUnsafeMutableBufferPointer { buffer throws(CryptoError) in
            try SecureRandom.fill(UnsafeMutableBufferPointer(rebasing: buffer[Self.headerByteCount..<plaintextStart]))
            try crypt(encrypt: true, key: sealing.key, buffer: buffer, context: context)
        }
        return Base64URL.encode(envelope)
    }

    /// The opened plaintext, decrypted in place inside the decoded envelope.
    public struct Opened {
        let envelope: [UInt8]
        /// True when a secret other than the first opened it: reseal with the first.
        public let needsReseal: Bool

        /// Runs `body` over the plaintext without copying it.
        public func withPlaintext<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
            try envelope.withUnsafeBufferPointer { buffer throws(E) in
                let start = Sealer.headerByteCount + AESGCM.nonceByteCount
                return try body(UnsafeBufferPointer(rebasing: buffer[start..<(buffer.count - AESGCM.tagByteCount)]))
            }
        }

        public var plaintext: [UInt8] { withPlaintext { Array($0) } }
    }

    /// Opens base64url `token` bytes (e.g. straight from the cookie header) sealed for `context`.
    /// One allocation for the decoded envelope; no Foundation.
    public func open(_ token: UnsafeBufferPointer<UInt8>, context: String) throws(SealedOpenError) -> Opened {
        guard let count = Base64URL.decodedCount(token.count), count >= Self.overheadByteCount else { throw .malformed }
        var envelope = [UInt8](repeating: 0, count: count)
        let keyIndex = try envelope.withUnsafeMutableBufferPointer { buffer throws(SealedOpenError) -> Int in
            guard Base64URL.decode(token, into: buffer) else { throw .malformed }
            guard buffer[0] == Self.version else { throw .unsupportedVersion }
            let id = UInt32(buffer[1]) << 24 | UInt32(buffer[2]) << 16 | UInt32(buffer[3]) << 8 | UInt32(buffer[4])
            guard let index = keys.firstIndex(where: { $0.id == id }) else { throw .unknownKey }
            do {
                try crypt(encrypt: false, key: keys[index].key, buffer: buffer, context: context)
            } catch {
                throw .authenticationFailed
            }
            return index
        }
        return Opened(envelope: envelope, needsReseal: keyIndex != 0)
    }

    /// Opens `token` given as any byte collection or string view.
    public func open(_ token: some Collection<UInt8>, context: String) throws(SealedOpenError) -> Opened {
        try withContiguousBytes(token) { buffer throws(SealedOpenError) in try open(buffer, context: context) }
    }

    /// En/decrypts the envelope in place: header and nonce in front, tag at the end.
    private func crypt(encrypt: Bool, key: [UInt8], buffer: UnsafeMutableBufferPointer<UInt8>,
                       context: String) throws(CryptoError) {
        let nonceEnd = Self.headerByteCount + AESGCM.nonceByteCount
        let tagStart = buffer.count - AESGCM.tagByteCount
        let body = UnsafeMutableBufferPointer(rebasing: buffer[nonceEnd..<tagStart])
        try key.withUnsafeBufferPointer { key throws(CryptoError) in
            try withContiguousBytes(context.utf8) { context throws(CryptoError) in
                try AESGCM.crypt(
                    encrypt: encrypt, key: key,
                    nonce: UnsafeBufferPointer(rebasing: buffer[Self.headerByteCount..<nonceEnd]),
                    aad: UnsafeBufferPointer(rebasing: buffer[0..<Self.headerByteCount]), aadSuffix: context,
                    input: UnsafeBufferPointer(body), output: body,
                    tag: UnsafeMutableBufferPointer(rebasing: buffer[tagStart...]))
            }
        }
    }
}
