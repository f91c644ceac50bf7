import Logging
import SidecarCrypto
import SidecarStore

/// `users.keep_refresh_tokens`: each sign-in's Apple refresh token kept in the store, sealed
/// with the session keys and bound to its user, so an operator who signs the user out
/// everywhere can also revoke it at Apple (`POST /users/<sub>/revoke?apple=1`). A later
/// sign-in replaces it; revoking it at Apple, deleting the account and Apple's own
/// revocation events forget it.
enum KeptRefreshTokenSeal {
    /// The sealed text holds `client id`, a newline, and the token: the token is revoked with
    /// the client secret of the client it was issued to (a Services ID or an app's bundle id).
    static func seal(token: String, clientID: String, subject: String, sealer: Sealer) -> String? {
        guard !clientID.utf8.contains(0x0A) else { return nil }
        return try? sealer.seal(Array((clientID + "\n" + token).utf8), context: context(subject))
    }

    /// The client id and token of `sealed`, nil when it does not open for `subject` (another
    /// user's record, keys rotated away, or not ours).
    static func open(_ sealed: String, subject: String, sealer: Sealer) -> (clientID: String, token: String)? {
        guard let opened = try? sealer.open(Array(sealed.utf8), context: context(subject)) else { return nil }
        let plaintext = opened.plaintext
        guard let newline = plaintext.firstIndex(of: 0x0A), newline > 0, newline + 1 < plaintext.count,
              let clientID = String(validating: plaintext[..<newline], as: UTF8.self),
              let token = String(validating: plaintext[(newline + 1)...], as: UTF8.self)
        else { return nil }
        return (clientID, token)
    }

    private static func context(_ subject: String) -> String { "apple refresh token " + subject }
}

extension AuthSettings {
    /// Keeps the refresh token a sign-in obtained (with the key on), after the user has the
    /// answer: a store that cannot keep it is logged, and the sign-in stands.
    func keepRefreshToken(_ token: String?, clientID: String, subject: String, atMs: Int64, logger: Logger) {
        guard lifecycle.keepsRefreshTokens, let token, !token.isEmpty else { return }
        guard let sealed = KeptRefreshTokenSeal.seal(token: token, clientID: clientID, subject: subject, sealer: sessions.sealer)
        else {
            logger.warning("refresh token not kept", metadata: ["sub": "\(subject)", "reason": "seal_failed"])
            return
        }
        shared.store.keepRefreshToken(subject, KeptRefreshToken(atMs: atMs, sealed: sealed)) { result in
            if case .failure(let error) = result {
                logger.warning("refresh token not kept", metadata: ["sub": "\(subject)", "error": "\(error)"])
            }
        }
    }

    /// Forgets the user's kept token: it was revoked, or Apple ended the authorization.
    func forgetRefreshToken(_ subject: String, logger: Logger) {
        guard lifecycle.keepsRefreshTokens else { return }
        shared.store.forgetRefreshToken(subject) { result in
            if case .failure(let error) = result {
                logger.warning("kept refresh token not forgotten", metadata: ["sub": "\(subject)", "error": "\(error)"])
            }
        }
    }
}
