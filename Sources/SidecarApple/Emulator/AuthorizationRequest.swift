import SidecarCrypto

/// A validated `GET /auth/authorize` request.
struct AuthorizationRequest {
    enum ResponseType: String { case code = "code", codeIDToken = "code id_token" }
    enum ResponseMode: String { case query, fragment, formPost = "form_post" }

    let rawQuery: String
    let clientID: String
    let redirectURI: String
    let responseType: ResponseType
    let responseMode: ResponseMode
    let scopes: [String]
    let state: String?
    let nonce: String?
    let codeChallenge: String?
    /// `emulator_auto_approve=EMAIL`: a test's way to skip the page for this request only.
    let autoApproveEmail: String?

    /// Validates like Apple, in Apple's order: client, redirect URI, response type and mode,
    /// scope, PKCE. `+` in the raw query is a literal plus (never a space).
    static func parse(rawQuery: String, options: EmulatorOptions) throws(OAuthError) -> AuthorizationRequest {
        let parameters: [String: String]
        do { parameters = try FormCoding.parameters(rawQuery, plusIsSpace: false) } catch {
            throw .invalidRequest("malformed query")
        }
        guard let clientID = parameters["client_id"], !clientID.isEmpty else { throw .invalidRequest("client_id required") }
        guard let client = options.client(clientID) else { throw OAuthError("invalid_client") }
        guard !client.redirectURIs.isEmpty else { throw OAuthError("unauthorized_client", "not a web client") }
        guard let redirectURI = parameters["redirect_uri"], !redirectURI.isEmpty else {
            throw .invalidRequest("redirect_uri required")
        }
        guard RedirectURIRule.isAcceptable(redirectURI), client.redirectURIs.contains(redirectURI) else {
            throw .invalidRequest("Invalid web redirect url.")
        }
        guard let typeText = parameters["response_type"] else { throw .invalidRequest("response_type required") }
        guard let responseType = ResponseType(rawValue: typeText) else {
            throw .invalidRequest("response_type must be code or code id_token")
        }
        let mode: ResponseMode
        if let modeText = parameters["response_mode"] {
            guard let parsed = ResponseMode(rawValue: modeText) else { throw .invalidRequest("response_mode") }
            mode = parsed
        } else {
            mode = responseType == .code ? .query : .fragment
        }
        if responseType == .codeIDToken && mode == .query {
            throw .invalidRequest("response_mode query is not allowed with id_token")
        }
        var scopes: [String] = []
        if let scopeText = parameters["scope"], !scopeText.isEmpty {
            for scope in scopeText.split(separator: " ", omittingEmptySubsequences: false) {
                guard scope == "name" || scope == "email" else { throw OAuthError("invalid_scope") }
                if !scopes.contains(String(scope)) { scopes.append(String(scope)) }
            }
            guard mode == .formPost else {
                throw .invalidRequest("response_mode must be form_post when name or email scope is requested")
            }
        }
        let challenge = parameters["code_challenge"]
        let method = parameters["code_challenge_method"]
        if let challenge {
            guard method == "S256" else { throw .invalidRequest("code_challenge_method must be S256") }
            guard challenge.utf8.count == 43, Base64URL.decode(challenge)?.count == 32 else {
                throw .invalidRequest("code_challenge must be a base64url SHA-256")
            }
        } else if method != nil {
            throw .invalidRequest("code_challenge_method without code_challenge")
        }
        return AuthorizationRequest(
            rawQuery: rawQuery, clientID: clientID, redirectURI: redirectURI, responseType: responseType,
            responseMode: mode, scopes: scopes, state: parameters["state"], nonce: parameters["nonce"],
            codeChallenge: challenge, autoApproveEmail: parameters["emulator_auto_approve"])
    }
}
