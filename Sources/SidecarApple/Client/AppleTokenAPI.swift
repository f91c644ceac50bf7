/// Apple's token, revoke and keys endpoints over an `AppleHTTPClient`.
/// Completions run once on the client's loop thread. Secrets are only ever sent, never logged.
public final class AppleTokenAPI {
    public enum TokenTypeHint: String, Sendable {
        case refreshToken = "refresh_token"
        case accessToken = "access_token"
    }

    public let client: AppleHTTPClient

    public init(client: AppleHTTPClient) {
        self.client = client
    }

    /// Authorization-code grant. `redirectURI` only if one was sent when authorizing (web),
    /// `codeVerifier` only with PKCE.
    public func exchangeCode(
        code: String, redirectURI: String?, codeVerifier: String?, clientID: String,
        clientSecret: String, completion: @escaping (Result<TokenResponse, AppleError>) -> Void
    ) {
        var fields = [
            ("client_id", clientID), ("client_secret", clientSecret), ("code", code),
            ("grant_type", "authorization_code"),
        ]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        if let codeVerifier { fields.append(("code_verifier", codeVerifier)) }
        requestToken(fields, completion: completion)
    }

    /// Refresh-token grant (validates that the user has not revoked the app).
    public func refresh(
        refreshToken: String, clientID: String, clientSecret: String,
        completion: @escaping (Result<TokenResponse, AppleError>) -> Void
    ) {
        requestToken(
            [
                ("client_id", clientID), ("client_secret", clientSecret),
                ("grant_type", "refresh_token"), ("refresh_token", refreshToken),
            ], completion: completion)
    }

    /// Revokes a token; Apple answers 200 with an empty body, also for invalid tokens.
    public func revoke(
        token: String, hint: TokenTypeHint, clientID: String, clientSecret: String,
        completion: @escaping (Result<Void, AppleError>) -> Void
    ) {
        let request = AppleHTTPRequest.form(
            path: "/auth/revoke",
            fields: [
                ("client_id", clientID), ("client_secret", clientSecret), ("token", token),
                ("token_type_hint", hint.rawValue),
            ])
        client.send(request) { result in
            completion(Self.classify(result).map { _ in () })
        }
    }

    /// Apple's JWKS as raw bytes (2xx only); parsing and caching belong to the key policy.
    public func fetchJWKS(completion: @escaping (Result<AppleHTTPResponse, AppleError>) -> Void) {
        client.send(AppleHTTPRequest(method: .GET, path: "/auth/keys")) { result in
            completion(Self.classify(result))
        }
    }

    private func requestToken(
        _ fields: [(String, String)], completion: @escaping (Result<TokenResponse, AppleError>) -> Void
    ) {
        client.send(AppleHTTPRequest.form(path: "/auth/token", fields: fields)) { result in
            completion(Self.classify(result).flatMap { response in
                guard let token = TokenResponse(json: response.body) else {
                    return .failure(.invalidResponse(status: response.status))
                }
                return .success(token)
            })
        }
    }

    /// 2xx → the response; 4xx with error JSON → `.rejected`; anything else → server error.
    static func classify(_ result: AppleHTTPResult) -> Result<AppleHTTPResponse, AppleError> {
        switch result {
        case .failure(let failure):
            return .failure(.transport(failure))
        case .response(let response) where (200..<300).contains(response.status):
            return .success(response)
        case .response(let response):
            if (400..<500).contains(response.status), let error = AppleJSON.appleError(response.body) {
                return .failure(.rejected(
                    AppleErrorCode(error.code), description: error.description, status: response.status))
            }
            return .failure(.appleServerError(status: response.status))
        }
    }
}
