import SidecarApple
import SidecarConfig

/// The account-lifecycle part of the sign-in settings: who may send notifications, where
/// verified events go, and how long revocations must be kept.
struct LifecycleSettings: Sendable {
    /// `notifications.forward_to`: the upstream's address and the path events are POSTed to.
    let forwardTo: (endpoint: AppleEndpoint, path: String)?
    /// `notifications.forward_to` as written, for logs.
    let forwardToText: String?
    /// The longest a session can live (`session.lifetime`): a subject's revocation is kept
    /// that long after its cutoff, when every session it covers has expired anyway.
    let sessionLifetime: Int64
    let leeway: Int64
    /// `apple.transfer.mapping_file`, read; nil without one.
    let transferMapping: TransferMapping?
    /// `users.keep_refresh_tokens`: each sign-in's refresh token is kept in the store, sealed.
    let keepsRefreshTokens: Bool

    init(config: Config) throws(AuthSetupError) {
        sessionLifetime = config.session.lifetime.seconds
        leeway = config.apple.leeway.seconds
        keepsRefreshTokens = config.users.keepRefreshTokens
        transferMapping = try config.appleTransfer.mappingFile.map { path throws(AuthSetupError) in try TransferMapping(path: path) }
        guard let url = config.notifications.forwardTo else {
            forwardTo = nil
            forwardToText = nil
            return
        }
        let port = url.port == (url.isHTTPS ? 443 : 80) ? "" : ":\(url.port)"
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        do {
            let endpoint = try AppleEndpoint(baseURL: "\(url.scheme)://\(host)\(port)", allowPlainHTTP: true)
            let path = (url.path.isEmpty ? "/" : url.path) + (url.query.isEmpty ? "" : "?" + url.query)
            forwardTo = (endpoint, path)
            forwardToText = url.description
        } catch {
            throw AuthSetupError(description: "notifications.forward_to: \(error)")
        }
    }
}

extension AuthSettings {
    /// Who Apple's notifications may be addressed to: every Services ID and the apps' bundle ids.
    var notificationAudiences: Set<String> { verifier.audiences.union(clientIDs).union(nativeAudiences) }
}
