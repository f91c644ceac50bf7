import SidecarCrypto
import SidecarEvent

/// `GET /auth/authorize` and the consent form it shows.
extension AppleEmulator {
    func authorize(_ request: ServiceRequest) -> ServiceResponse {
        let authorization: AuthorizationRequest
        do { authorization = try AuthorizationRequest.parse(rawQuery: request.query ?? "", options: options) } catch {
            logger.info("authorize refused", metadata: ["error": "\(error.code)", "why": "\(error.description ?? "")"])
            return error.response
        }
        if let email = authorization.autoApproveEmail {
            guard TestUser.isPlausibleEmail(email) else { return OAuthError.invalidRequest("emulator_auto_approve").response }
            return approve(authorization, as: users.first { $0.email == email } ?? TestUser(email: email))
        }
        if let user = autoApprove { return approve(authorization, as: user) }
        return AuthorizePages.consent(authorization, users: users)
    }

    /// `POST /auth/authorize/consent`: the page's answer. The original query travels in the
    /// form and is validated again, so nothing is kept between the page and its answer.
    func consent(_ request: ServiceRequest) -> ServiceResponse {
        guard request.mediaType == "application/x-www-form-urlencoded",
              let text = String(validating: request.body, as: UTF8.self),
              let form = try? FormCoding.parameters(text, plusIsSpace: true)
        else { return OAuthError.invalidRequest("form expected").response }
        let authorization: AuthorizationRequest
        do { authorization = try AuthorizationRequest.parse(rawQuery: form["request"] ?? "", options: options) } catch {
            return error.response
        }
        switch form["action"] {
        case "cancel":
            var fields = [("error", "user_cancelled_authorize")]
            if let state = authorization.state { fields.append(("state", state)) }
            return deliver(authorization, fields)
        case "approve":
            let hide = form["hide_email"] == "1"
            let typed = (form["email"] ?? "").trimmingEdges(" \t")
            if !typed.isEmpty {
                guard TestUser.isPlausibleEmail(typed) else {
                    return withStatus(400, AuthorizePages.consent(authorization, users: users, message: "That is not an email address."))
                }
                return approve(authorization, as: TestUser(
                    email: typed, firstName: nonEmpty(form["first_name"]), lastName: nonEmpty(form["last_name"]), hideMyEmail: hide))
            }
            guard let index = form["known"].flatMap({ Int($0) }), users.indices.contains(index) else {
                return withStatus(400, AuthorizePages.consent(authorization, users: users, message: "Choose a user or type an email."))
            }
            var user = users[index]
            if hide { user.hideMyEmail = true }
            if let first = nonEmpty(form["first_name"]) { user.firstName = first }
            if let last = nonEmpty(form["last_name"]) { user.lastName = last }
            return approve(authorization, as: user)
        default:
            return OAuthError.invalidRequest("action").response
        }
    }

    /// Issues a code (and an id_token for `code id_token`) and sends the answer to the
    /// redirect URI; `user` goes along only on the user's first authorization of this client.
    func approve(_ authorization: AuthorizationRequest, as user: TestUser) -> ServiceResponse {
        let now = options.clock()
        let identity = grantedIdentity(user, clientID: authorization.clientID, now: now)
        let code: String
        do { code = try AppleIdentifiers.token(prefix: "c") } catch { return .text(500, "random generator failed\n") }
        let isFirst = store.recordAuthorization(clientID: authorization.clientID, subject: identity.subject)
        store.insert(code: code, IssuedCode(
            clientID: authorization.clientID, redirectURI: authorization.redirectURI,
            codeChallenge: authorization.codeChallenge, nonce: authorization.nonce, scopes: authorization.scopes,
            identity: identity, authTime: now, issuedAt: now), now: now, lifetime: options.codeLifetime)
        var fields: [(String, String)] = []
        if let state = authorization.state { fields.append(("state", state)) }
        fields.append(("code", code))
        if authorization.responseType == .codeIDToken {
            let context = IDTokenMinter.Context(
                clientID: authorization.clientID, identity: identity, scopes: authorization.scopes,
                nonce: authorization.nonce, authTime: now, accessToken: nil, code: code)
            guard let idToken = try? minter.mint(context, now: now) else { return .text(500, "signing failed\n") }
            fields.append(("id_token", idToken))
        }
        if isFirst, !authorization.scopes.isEmpty, authorization.responseMode == .formPost {
            fields.append(("user", userJSON(identity, scopes: authorization.scopes)))
        }
        return deliver(authorization, fields)
    }

    /// `{"name":{"firstName":…,"lastName":…},"email":…}` with what the scopes allow.
    private func userJSON(_ identity: GrantedIdentity, scopes: [String]) -> String {
        var user: [String: JSONValue] = [:]
        if scopes.contains("name") {
            var name: [String: JSONValue] = [:]
            if let first = identity.firstName { name["firstName"] = .string(first) }
            if let last = identity.lastName { name["lastName"] = .string(last) }
            user["name"] = .object(name)
        }
        if scopes.contains("email") { user["email"] = .string(identity.email) }
        return JSONValue.object(user).jsonText
    }

    /// Sends `fields` to the redirect URI in the requested response mode.
    private func deliver(_ authorization: AuthorizationRequest, _ fields: [(String, String)]) -> ServiceResponse {
        let uri = authorization.redirectURI
        switch authorization.responseMode {
        case .formPost:
            return AuthorizePages.formPost(action: uri, fields: fields)
        case .query:
            return redirect(uri + (uri.contains("?") ? "&" : "?") + FormCoding.encode(fields))
        case .fragment:
            return redirect(uri + "#" + FormCoding.encode(fields))
        }
    }

    private func redirect(_ location: String) -> ServiceResponse {
        ServiceResponse(status: 302, headers: [("Location", location), ("Cache-Control", "no-store")])
    }

    private func withStatus(_ status: Int, _ response: ServiceResponse) -> ServiceResponse {
        var response = response
        response.status = status
        return response
    }

    private func nonEmpty(_ value: String?) -> String? {
        guard let value = value?.trimmingEdges(" \t"), !value.isEmpty else { return nil }
        return String(value.prefix(256))
    }
}

extension String {  // (no Foundation in this module)
    func trimmingEdges(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
