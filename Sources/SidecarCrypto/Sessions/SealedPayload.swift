/// A value with a compact binary codec that can be sealed by `PayloadSealer`.
public protocol SealedPayload: Sendable {
    /// Key-derivation label: payloads of different kinds are sealed under different keys.
    static var purpose: String { get }
    func encode(into writer: inout ByteWriter)
    /// Decodes exactly what `encode` wrote; throws `.invalidPayload` on anything else.
    init(from reader: inout ByteReader) throws(SealedOpenError)
    /// Throws when the payload is no longer valid at `now` (Unix seconds).
    func validate(now: Int64) throws(SealedOpenError)
}

/// Seals and opens one kind of payload (`SessionSealer`, `LoginStateSealer`, `NativeNonceSealer`).
public struct PayloadSealer<Payload: SealedPayload>: Sendable {
    public let sealer: Sealer

    /// - Parameter secrets: `session.secrets`, decoded; the first one seals.
    public init(secrets: [[UInt8]]) throws(Sealer.ConfigurationError) {
        sealer = try Sealer(secrets: secrets, purpose: Payload.purpose)
    }

    /// Seals `payload` bound to `context` (the cookie name).
    public func seal(_ payload: Payload, context: String) throws(CryptoError) -> String {
        var writer = ByteWriter()
        payload.encode(into: &writer)
        return try sealer.seal(writer.bytes, context: context)
    }

    /// Opens, decodes and validates against `now`. `needsReseal` is true when an older secret opened it.
    public func open(_ token: UnsafeBufferPointer<UInt8>, context: String,
                     now: Int64) throws(SealedOpenError) -> (payload: Payload, needsReseal: Bool) {
        let opened = try sealer.open(token, context: context)
        let payload = try opened.withPlaintext { plaintext throws(SealedOpenError) -> Payload in
            var reader = ByteReader(plaintext)
            let payload = try Payload(from: &reader)
            guard reader.isAtEnd else { throw .invalidPayload }
            return payload
        }
        try payload.validate(now: now)
        return (payload, opened.needsReseal)
    }

    /// Opens `token` given as any byte collection (e.g. `cookie.utf8`).
    public func open(_ token: some Collection<UInt8>, context: String,
                     now: Int64) throws(SealedOpenError) -> (payload: Payload, needsReseal: Bool) {
        try withContiguousBytes(token) { buffer throws(SealedOpenError) in try open(buffer, context: context, now: now) }
    }
}

public typealias SessionSealer = PayloadSealer<Session>
public typealias LoginStateSealer = PayloadSealer<LoginState>
public typealias NativeNonceSealer = PayloadSealer<NativeNonce>
