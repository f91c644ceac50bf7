import Logging
import SidecarCrypto

/// Nonces for native sign-ins. `GET {prefix}/native/nonce` hands out a
/// `NativeNonce` sealed with the session secrets (the sealed text *is* the nonce, so the
/// sidecar keeps nothing until it is used); the app puts it, raw or as SHA-256 hex, into its
/// Apple request, and `/native` spends it once through `AuthShared.claimOnce`.
///
/// The single-use key of a nonce N is SHA-256(N): the same 32 bytes whether the sign-in
/// names N in its body or the token carries only hex(SHA-256(N)), so a replay cannot dodge
/// the check by leaving the nonce out of the body.
enum NativeNonces {
    /// What sealed nonces are bound to (their key is already separate by purpose; this keeps
    /// them from ever opening as anything sealed for another context under that key).
    static let context = "native-nonce"

    /// A spent nonce: the key to claim and until when it must stay claimed.
    struct Claim: Equatable {
        var key: [UInt8]
        var until: Int64
    }

    /// Checks a nonce from the body: sealed by us and unexpired. Returns what the token's
    /// `nonce` may be (N or its SHA-256 hex) and the claim to make once the token verified.
    static func check(_ nonce: String, sealer: NativeNonceSealer, now: Int64) throws(LoginFailure)
        -> (expectation: NonceExpectation, claim: Claim)
    {
        let opened: NativeNonce
        do throws(SealedOpenError) {
            opened = try sealer.open(nonce.utf8, context: context, now: now).payload
        } catch .expired {
            throw .nonceExpired
        } catch {
            if nonce.utf8.count == 64, Hex.decode(nonce) != nil { throw .nonceHashed }
            throw .nonceInvalid
        }
        let bytes = Array(nonce.utf8)
        return (.oneOf([nonce, SHA256.hexDigest(bytes)]), Claim(key: SHA256.hash(bytes), until: opened.expiresAt))
    }

    /// The body named no nonce but the verified token carries `tokenNonce`. If it is one of
    /// ours (raw) it must be unexpired; ours or not, a raw sealed nonce or a SHA-256 hex value
    /// is spent like a named one, so the same token cannot sign in twice while it is valid.
    /// Anything else is the app's own nonce in a form we cannot bind: nil (the token's expiry
    /// is then the only replay bound, as without a nonce).
    static func implicitClaim(
        tokenNonce: String, sealer: NativeNonceSealer, now: Int64, tokenValidUntil: Int64
    ) throws(LoginFailure) -> Claim? {
        do throws(SealedOpenError) {
            let opened = try sealer.open(tokenNonce.utf8, context: context, now: now).payload
            return Claim(key: SHA256.hash(Array(tokenNonce.utf8)), until: opened.expiresAt)
        } catch .expired {
            throw .nonceExpired
        } catch {
            // Not a raw sealed nonce; perhaps its hash.
        }
        guard tokenNonce.utf8.count == 64, let digest = Hex.decode(tokenNonce) else { return nil }
        return Claim(key: digest, until: max(tokenValidUntil, now + AuthShared.nativeNonceSeconds))
    }
}
