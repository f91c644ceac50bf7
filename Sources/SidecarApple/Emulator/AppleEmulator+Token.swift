import SidecarCrypto
import SidecarEvent

/// `POST /auth/token` and `POST /auth/revoke`.
extension AppleEmulator {
    func token(_ request: ServiceRequest, respond: @escaping (ServiceResponse) -> Void) {
        let fault = faults.isEmpty ? nil : faults.removeFirst()
        if let fault { logger.info("token request answered with an armed fault", metadata: ["fault": "\(fault.name)"]) }
        switch fault {
        case .hang?: return
        case .http500?: respond(.html(500, "<html><body><h1>Internal Server Error</h1></body></html>"))
        case .invalidGrant?: respond(OAuthError("invalid_grant").response)
        case .invalidClient?: respond(OAuthError("invalid_client").response)
        case .invalidRequest?: respond(OAuthError("invalid_request").response)
        case .http502HTML?:
            // What a load balancer in front of Apple answers when Apple is down: HTML, not JSON.
            respond(.html(502, "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"))
        case .malformedJSON?: respond(.json(200, #"{"access_token":"a.1","token_type":"Bearer","#))
        case .slow(let ms)?: delay(tokenResponse(request, fault: nil), milliseconds: ms, then: respond)
        default: respond(tokenResponse(request, fault: fault))
        }
    }

    private func tokenResponse(_ request: ServiceRequest, fault: EmulatorFault?) -> ServiceResponse {
        let now = options.clock()
        let form: [String: String]
        let clientID: String
        do throws(OAuthError) {
            form = try formBody(request)
        } catch {
            return error.response
        }
        do throws(OAuthError) {
            clientID = try authenticateClient(form, now: now, teams: form["grant_type"] == "client_credentials"
                ? migrationTeams(of: form["client_id"] ?? "", now: now) : nil)
        } catch {
            noteTokenRequest(form, clientAuthenticated: false)
            return error.response
        }
        noteTokenRequest(form, clientAuthenticated: true)
        do throws(OAuthError) {
            switch form["grant_type"] {
            case nil, ""?: throw OAuthError.invalidRequest("grant_type required")
            case "authorization_code"?: return try exchangeCode(form, clientID: clientID, now: now, fault: fault)
            case "refresh_token"?: return try refresh(form, clientID: clientID, now: now, fault: fault)
            case "client_credentials"?: return try migrationAccessToken(form, clientID: clientID, now: now)
            default: throw OAuthError("unsupported_grant_type")
            }
        } catch {
            logger.info("token request refused", metadata: ["error": "\(error.code)", "why": "\(error.description ?? "")"])
            return error.response
        }
    }

    private func exchangeCode(_ form: [String: String], clientID: String, now: Int64,
                              fault: EmulatorFault?) throws(OAuthError) -> ServiceResponse {
        guard let code = form["code"], !code.isEmpty else { throw .invalidRequest("code required") }
        guard let issued = store.code(code), now - issued.issuedAt < options.codeLifetime else {
            throw OAuthError("invalid_grant", "The code has expired or has been revoked.")
        }
        guard !issued.used else { throw OAuthError("invalid_grant", "The code has already been used.") }
        guard issued.clientID == clientID else { throw OAuthError("invalid_grant", "client_id mismatch.") }
        if let expected = issued.redirectURI {
            guard let redirectURI = form["redirect_uri"] else { throw .invalidRequest("redirect_uri required") }
            guard redirectURI == expected else { throw OAuthError("invalid_grant", "redirect_uri mismatch.") }
        } else if form["redirect_uri"] != nil {
            // A native app's code was never tied to a redirect URI; a relying party sending
            // one mixes up its web and native exchanges.
            throw OAuthError("invalid_grant", "redirect_uri must be omitted for a code issued to an app.")
        }
        let verifier = form["code_verifier"]
        if let challenge = issued.codeChallenge {
            guard let verifier else { throw .invalidRequest("code_verifier required") }
            guard Self.isVerifierSyntax(verifier),
                  ConstantTime.equals(Array(IDTokenMinter.s256(verifier).utf8), Array(challenge.utf8))
            else { throw OAuthError("invalid_grant", "code_verifier does not match code_challenge.") }
        } else if verifier != nil {
            throw OAuthError("invalid_grant", "code_verifier without code_challenge.")
        }
        store.markUsed(code)
        let accessToken: String, refreshToken: String
        do {
            accessToken = try AppleIdentifiers.token(prefix: "a")
            refreshToken = try AppleIdentifiers.token(prefix: "r")
        } catch { throw OAuthError("server_error").with(status: 500) }
        store.insert(refreshToken: refreshToken, RefreshGrant(
            clientID: clientID, scopes: issued.scopes, identity: issued.identity, authTime: issued.authTime))
        let context = IDTokenMinter.Context(
            clientID: clientID, identity: issued.identity, scopes: issued.scopes, nonce: issued.nonce,
            authTime: issued.authTime, accessToken: accessToken, code: nil)
        return try success(accessToken: accessToken, refreshToken: refreshToken, context, now: now, fault: fault)
    }

    /// A refresh grant answers a new access token and id_token, never a new refresh token.
    private func refresh(_ form: [String: String], clientID: String, now: Int64,
                         fault: EmulatorFault?) throws(OAuthError) -> ServiceResponse {
        guard let token = form["refresh_token"], !token.isEmpty else { throw .invalidRequest("refresh_token required") }
        guard let grant = store.grant(token), grant.clientID == clientID else { throw OAuthError("invalid_grant") }
        let accessToken: String
        do { accessToken = try AppleIdentifiers.token(prefix: "a") } catch { throw OAuthError("server_error").with(status: 500) }
        let context = IDTokenMinter.Context(
            clientID: clientID, identity: grant.identity, scopes: grant.scopes, nonce: nil,
            authTime: grant.authTime, accessToken: accessToken, code: nil)
        return try success(accessToken: accessToken, refreshToken: nil, context, now: now, fault: fault)
    }

    private func success(accessToken: String, refreshToken: String?, _ context: IDTokenMinter.Context, now: Int64,
                         fault: EmulatorFault?) throws(OAuthError) -> ServiceResponse {
        var body: [String: JSONValue] = [
            "access_token": .string(accessToken), "token_type": .string("Bearer"),
            "expires_in": .integer(options.accessTokenLifetime),
        ]
        if let refreshToken { body["refresh_token"] = .string(refreshToken) }
        do {
            if let idToken = try minter.mint(context, now: now, fault: fault) { body["id_token"] = .string(idToken) }
        } catch { throw OAuthError("server_error").with(status: 500) }
        return .json(200, JSONValue.object(body).jsonText)
    }

    /// Keeps what `GET /emulator/token-requests` shows: the grant, the client, the field
    /// names, and the redirect URI (not a secret); secrets, codes and tokens are left out.
    private func noteTokenRequest(_ form: [String: String], clientAuthenticated: Bool) {
        var entry: [String: JSONValue] = [
            "fields": .array(form.keys.sorted().map { .string($0) }),
            "client_authenticated": .bool(clientAuthenticated),
        ]
        for name in ["grant_type", "client_id", "redirect_uri"] {
            if let value = form[name] { entry[name] = .string(value) }
        }
        if tokenRequests.count >= Self.keptTokenRequests { tokenRequests.removeFirst() }
        tokenRequests.append(.object(entry))
    }

    func revoke(_ request: ServiceRequest) -> ServiceResponse {
        let now = options.clock()
        var form: [String: String] = [:]
        var authenticated = false
        var grantClientID: String?? = nil
        do throws(OAuthError) {
            form = try formBody(request)
            let clientID = try authenticateClient(form, now: now)
            authenticated = true
            guard let token = form["token"], !token.isEmpty else { throw OAuthError.invalidRequest("token required") }
            switch form["token_type_hint"] {
            case nil, "refresh_token"?, "access_token"?: break
            default: throw OAuthError("unsupported_token_type")
            }
            let grant = store.grant(token)
            grantClientID = .some(grant?.clientID)
            if let grant, grant.clientID == clientID { store.revoke(refreshToken: token) }
            noteRevocation(form, clientAuthenticated: true, grantClientID: grantClientID, error: nil)
            return ServiceResponse(status: 200)
        } catch {
            logger.info("revoke refused", metadata: ["error": "\(error.code)", "why": "\(error.description ?? "")"])
            noteRevocation(form, clientAuthenticated: authenticated, grantClientID: grantClientID, error: error.code)
            return error.response
        }
    }

    /// The form body; anything but `application/x-www-form-urlencoded` (JSON included) is refused.
    func formBody(_ request: ServiceRequest) throws(OAuthError) -> [String: String] {
        guard request.mediaType == "application/x-www-form-urlencoded" else {
            throw .invalidRequest("Content-Type must be application/x-www-form-urlencoded")
        }
        guard let text = String(validating: request.body, as: UTF8.self) else { throw .invalidRequest("body is not UTF-8") }
        do { return try FormCoding.parameters(text, plusIsSpace: true) } catch { throw .invalidRequest("malformed form") }
    }

    /// `client_id` must be registered and `client_secret` valid for it, issued by one of
    /// `teams` (nil: the team the client belongs to now); returns the client id.
    func authenticateClient(_ form: [String: String], now: Int64, teams: [String]? = nil) throws(OAuthError) -> String {
        guard let clientID = form["client_id"], !clientID.isEmpty else { throw .invalidRequest("client_id required") }
        guard let secret = form["client_secret"], !secret.isEmpty else { throw .invalidRequest("client_secret required") }
        guard options.client(clientID) != nil else { throw OAuthError("invalid_client") }
        var refusal: ClientSecretVerifier.Refusal?
        for team in teams ?? [transfers.team(of: clientID)] {
            do throws(ClientSecretVerifier.Refusal) {
                try secretVerifier.forTeam(team).verify(secret, clientID: clientID, now: now)
                return clientID
            } catch { refusal = refusal ?? error }
        }
        logger.info("client secret refused", metadata: ["client_id": "\(clientID)", "why": "\(refusal.map { "\($0)" } ?? "")"])
        throw OAuthError("invalid_client")
    }

    /// RFC 7636: 43–128 characters of `A-Z a-z 0-9 - . _ ~`.
    private static func isVerifierSyntax(_ verifier: String) -> Bool {
        (43...128).contains(verifier.utf8.count) && verifier.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
        }
    }
}

extension OAuthError {
    func with(status: Int) -> OAuthError {
        var copy = self
        copy.status = status
        return copy
    }
}

extension IDTokenMinter {
    /// PKCE S256: base64url(SHA-256(verifier)).
    static func s256(_ verifier: String) -> String { Base64URL.encode(SHA256.hash(Array(verifier.utf8))) }
}
