/// Opens session values (cookies, bearer tokens) the way `SessionSealer.open` does, for one
/// thread's request path: an AES-256-GCM context keyed once per secret and one buffer the
/// envelope is decoded and decrypted into, reused for every value. Not thread-safe.
public final class SessionOpener {
    private let keys: [(id: UInt32, context: AESGCMKeyedContext)]
    /// The associated data: the value's header (copied in per value) then the context the
    /// values are bound to (the cookie name), contiguous so that it is one GCM update.
    private var associatedData: [UInt8]
    private var envelope: [UInt8] = []

    public init(_ sealer: SessionSealer, context: String) throws(CryptoError) {
        var keys: [(id: UInt32, context: AESGCMKeyedContext)] = []
        for key in sealer.sealer.keys {
            let context = try key.key.withUnsafeBufferPointer { key throws(CryptoError) in
                try AESGCMKeyedContext(key: key)
            }
            keys.append((key.id, context))
        }
        self.keys = keys
        associatedData = [UInt8](repeating: 0, count: Sealer.headerByteCount) + Array(context.utf8)
    }

    /// Opens, decodes and validates `token` against `now`; `needsReseal` when a secret other
    /// than the first opened it. Same errors as `SessionSealer.open`.
    public func open(_ token: UnsafeBufferPointer<UInt8>, now: Int64) throws(SealedOpenError) -> (payload: Session, needsReseal: Bool) {
        try withOpened(token, now: now) { fields, needsReseal in (Session(fields), needsReseal) }
    }

    /// Opens `token` and validates it against `now` like `open`, and hands `use` the payload
    /// read in place — no allocation. The payload is valid only during the call and is wiped
    /// from the reused buffer after it.
    public func withOpened<Result>(
        _ token: UnsafeBufferPointer<UInt8>, now: Int64, _ use: (SessionFields, _ needsReseal: Bool) -> Result
    ) throws(SealedOpenError) -> Result {
        guard let count = Base64URL.decodedCount(token.count), count >= Sealer.overheadByteCount else { throw .malformed }
        if envelope.count < count { envelope = [UInt8](repeating: 0, count: count) }
        return try envelope.withUnsafeMutableBufferPointer { whole throws(SealedOpenError) -> Result in
            let buffer = UnsafeMutableBufferPointer(rebasing: whole[0..<count])
            guard Base64URL.decode(token, into: buffer) else { throw .malformed }
            guard buffer[0] == Sealer.version else { throw .unsupportedVersion }
            let id = UInt32(buffer[1]) << 24 | UInt32(buffer[2]) << 16 | UInt32(buffer[3]) << 8 | UInt32(buffer[4])
            guard let index = keys.firstIndex(where: { $0.id == id }) else { throw .unknownKey }
            let nonceEnd = Sealer.headerByteCount + AESGCM.nonceByteCount
            let tagStart = count - AESGCM.tagByteCount
            let body = UnsafeMutableBufferPointer(rebasing: buffer[nonceEnd..<tagStart])
            defer { body.update(repeating: 0) }  // no session plaintext left behind in the buffer
            do {
                try associatedData.withUnsafeMutableBufferPointer { aad throws(CryptoError) in
                    for i in 0..<Sealer.headerByteCount { aad[i] = buffer[i] }
                    try keys[index].context.open(
                        nonce: UnsafeBufferPointer(rebasing: buffer[Sealer.headerByteCount..<nonceEnd]),
                        aad: UnsafeBufferPointer(aad), aadSuffix: UnsafeBufferPointer(start: nil, count: 0),
                        body: body, tag: UnsafeBufferPointer(rebasing: buffer[tagStart...]))
                }
            } catch {
                throw .authenticationFailed
            }
            let fields = try SessionFields(parsing: UnsafeBufferPointer(body))
            try fields.validate(now: now)
            return use(fields, index != 0)
        }
    }
}
