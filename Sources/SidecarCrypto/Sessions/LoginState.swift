/// The in-flight login kept in the short-lived state cookie between `/login` and `/callback`.
public struct LoginState: Sendable, Equatable {
    static let maximumTokenBytes = 255
    static let maximumRedirectBytes = 4096

    public var state: String
    /// The raw nonce (its hash went to Apple).
    public var nonce: String
    /// PKCE code verifier; nil when PKCE is off.
    public var codeVerifier: String?
    /// The validated `rd` target.
    public var redirectTarget: String
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(state: String, nonce: String, codeVerifier: String?, redirectTarget: String,
                createdAt: Int64, expiresAt: Int64) {
        self.state = state
        self.nonce = nonce
        self.codeVerifier = codeVerifier
        self.redirectTarget = redirectTarget
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    public var isEncodable: Bool {
        state.utf8.count <= Self.maximumTokenBytes && nonce.utf8.count <= Self.maximumTokenBytes
            && (codeVerifier?.utf8.count ?? 0) <= Self.maximumTokenBytes
            && redirectTarget.utf8.count <= Self.maximumRedirectBytes
    }
}

extension LoginState: SealedPayload {
    public static let purpose = "login-state"

    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(1))
        writer.write(state, wide: false)
        writer.write(nonce, wide: false)
        writer.write(UInt8(codeVerifier == nil ? 0 : 1))
        if let codeVerifier { writer.write(codeVerifier, wide: false) }
        writer.write(redirectTarget, wide: true)
        writer.write(createdAt)
        writer.write(expiresAt)
    }

    public init(from reader: inout ByteReader) throws(SealedOpenError) {
        guard try reader.readByte() == 1 else { throw .unsupportedVersion }
        state = try reader.readString(wide: false, maximumByteCount: Self.maximumTokenBytes)
        nonce = try reader.readString(wide: false, maximumByteCount: Self.maximumTokenBytes)
        switch try reader.readByte() {
        case 0: codeVerifier = nil
        case 1: codeVerifier = try reader.readString(wide: false, maximumByteCount: Self.maximumTokenBytes)
        default: throw .invalidPayload
        }
        redirectTarget = try reader.readString(wide: true, maximumByteCount: Self.maximumRedirectBytes)
        createdAt = try reader.readInt64()
        expiresAt = try reader.readInt64()
    }

    public func validate(now: Int64) throws(SealedOpenError) {
        guard now < expiresAt else { throw .expired }
    }
}

/// A nonce handed to a native app by `GET /.auth/native/nonce`; the sealed text itself is the
/// nonce value. `id` lets the caller enforce single use.
public struct NativeNonce: Sendable, Equatable {
    public var id: [UInt8]
    public var expiresAt: Int64

    public init(id: [UInt8], expiresAt: Int64) {
        self.id = id
        self.expiresAt = expiresAt
    }

    /// A fresh nonce with a random 16-byte id.
    public static func random(expiresAt: Int64) throws(CryptoError) -> NativeNonce {
        NativeNonce(id: try SecureRandom.bytes(16), expiresAt: expiresAt)
    }
}

extension NativeNonce: SealedPayload {
    public static let purpose = "native-nonce"

    public func encode(into writer: inout ByteWriter) {
        writer.write(UInt8(1))
        writer.write(UInt8(truncatingIfNeeded: id.count))
        writer.write(raw: id.prefix(255))
        writer.write(expiresAt)
    }

    public init(from reader: inout ByteReader) throws(SealedOpenError) {
        guard try reader.readByte() == 1 else { throw .unsupportedVersion }
        let count = Int(try reader.readByte())
        guard count >= 16 else { throw .invalidPayload }
        id = try reader.readRaw(count)
        expiresAt = try reader.readInt64()
    }

    public func validate(now: Int64) throws(SealedOpenError) {
        guard now < expiresAt else { throw .expired }
    }
}
