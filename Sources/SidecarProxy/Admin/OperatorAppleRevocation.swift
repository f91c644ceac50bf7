import SidecarApple
import SidecarCrypto
import SidecarEvent
import SidecarHTTPClient
import SidecarStore

/// `POST /users/<sub>/revoke?apple=1`: the user's kept refresh token (`users.keep_refresh_tokens`)
/// revoked at Apple, with the client secret of the client it was issued to, on the admin
/// listener's loop — never on a proxy worker, so no request waits on Apple for it.
final class OperatorAppleRevocation {
    /// What became of the Apple side; `reason` is a stable code (Apple's error when it gave one).
    enum Outcome: Equatable {
        case revoked(clientID: String)
        /// No token is kept for the user (never signed in since the key was on, or forgotten).
        case noRefreshToken
        /// A kept token that no session key opens (the keys were rotated away): forgotten.
        case unreadable
        case failed(reason: String)
        case storeFailed(String)

        /// The `apple` member of the answer and the audit line.
        var label: String {
            switch self {
            case .revoked: "revoked"
            case .noRefreshToken: "no_refresh_token"
            case .unreadable: "refresh_token_unreadable"
            case .failed: "failed"
            case .storeFailed: "store_failed"
            }
        }
    }

    private let settings: AuthSettings
    private let loop: EventLoop
    private var api: AppleTokenAPI?

    init(settings: AuthSettings, loop: EventLoop) {
        self.settings = settings
        self.loop = loop
    }

    /// The key is on: sign-ins keep their tokens, so there may be one to revoke.
    var isEnabled: Bool { settings.lifecycle.keepsRefreshTokens }

    /// Revokes `subject`'s kept token at Apple; `completion` runs once on the loop. The kept
    /// token is forgotten once Apple confirmed (or it could not be opened); on a failure it is
    /// kept, so the operator can retry.
    func revoke(_ subject: String, store: any StoreBackend, completion: @escaping (Outcome) -> Void) {
        store.keptRefreshToken(subject) { [self] result in
            switch result {
            case .failure(let error):
                completion(.storeFailed("\(error)"))
            case .success(nil):
                completion(.noRefreshToken)
            case .success(let kept?):
                guard let (clientID, token) = KeptRefreshTokenSeal.open(kept.sealed, subject: subject, sealer: settings.sessions.sealer)
                else {
                    store.forgetRefreshToken(subject) { _ in completion(.unreadable) }
                    return
                }
                revokeAtApple(token, clientID: clientID) { outcome in
                    guard case .revoked = outcome else { return completion(outcome) }
                    store.forgetRefreshToken(subject) { _ in completion(outcome) }
                }
            }
        }
    }

    private func revokeAtApple(_ token: String, clientID: String, completion: @escaping (Outcome) -> Void) {
        let secret: String
        do { secret = try settings.secrets.secret(forClientID: clientID) } catch {
            return completion(.failed(reason: "client_secret_failed"))
        }
        let api: AppleTokenAPI
        if let existing = self.api {
            api = existing
        } else {
            let configuration = AppleHTTPClient.Configuration(
                endpoint: settings.appleEndpoint, caFile: settings.appleCAFile, connectTimeout: 5, totalTimeout: 10)
            do { api = AppleTokenAPI(client: try AppleHTTPClient(base: loop.base, configuration: configuration)) } catch {
                return completion(.failed(reason: "apple_client_failed"))
            }
            self.api = api
        }
        api.revoke(token: token, hint: .refreshToken, clientID: clientID, clientSecret: secret) { result in
            switch result {
            case .success: completion(.revoked(clientID: clientID))
            case .failure(let error): completion(.failed(reason: error.lifecycleReason))
            }
        }
    }
}
