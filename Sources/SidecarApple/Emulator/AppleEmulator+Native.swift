import SidecarCrypto
import SidecarEvent

/// What an iOS or macOS device gets from `ASAuthorizationAppleIDProvider`,
/// without a device: an identity token whose `aud` is the app's bundle id and an
/// authorization code bound to no redirect URI, so the app's server must exchange it with
/// `client_id` = the bundle id and no `redirect_uri` — the token endpoint refuses anything else.
extension AppleEmulator {
    /// `POST /emulator/native {"client_id", "email"?, "firstName"?, "lastName"?, "hideMyEmail"?,
    /// "nonce"?, "scopes"?, "fault"?}` → `{"identityToken", "authorizationCode", "user", "email",
    /// "fullName", "realUserStatus"}`, the fields of `ASAuthorizationAppleIDCredential`. As on a
    /// device, `email` and `fullName` are filled in on the user's first authorization of the
    /// app only (null afterwards), and the nonce is copied into the token exactly as given
    /// (raw or hashed is the app's choice). `fault` spoils the identity token the way
    /// `/emulator/faults` spoils a token response's id_token.
    func nativeAuthorization(_ body: JSONValue) throws(ControlError) -> ServiceResponse {
        guard let object = body.objectValue else { throw ControlError("expected a JSON object") }
        guard let clientID = object["client_id"]?.stringValue, options.client(clientID) != nil else {
            throw ControlError("client_id must name a registered client (e.g. --client BUNDLE_ID)")
        }
        let user = try nativeUser(object)
        let scopes = try nativeScopes(object["scopes"])
        let nonce: String?
        switch object["nonce"] {
        case nil, .null?: nonce = nil
        case .string(let value)?: nonce = value
        default: throw ControlError("nonce must be a string")
        }
        var fault: EmulatorFault?
        if let name = object["fault"], name != .null {
            guard let text = name.stringValue, let parsed = EmulatorFault(name: text), parsed.spoilsIDToken else {
                let names = EmulatorFault.allNames.filter { EmulatorFault(name: $0)?.spoilsIDToken == true }
                throw ControlError("fault must be one that spoils an id_token: \(names.joined(separator: ", "))")
            }
            fault = parsed
        }

        let now = options.clock()
        let identity = grantedIdentity(user, clientID: clientID, now: now)
        let code: String
        do { code = try AppleIdentifiers.token(prefix: "c") } catch { return .json(500, Self.message("random generator failed")) }
        let isFirst = store.recordAuthorization(clientID: clientID, subject: identity.subject)
        store.insert(code: code, IssuedCode(
            clientID: clientID, redirectURI: nil, codeChallenge: nil, nonce: nonce, scopes: scopes, identity: identity,
            authTime: now, issuedAt: now), now: now, lifetime: options.codeLifetime)
        let context = IDTokenMinter.Context(
            clientID: clientID, identity: identity, scopes: scopes, nonce: nonce, authTime: now, accessToken: nil,
            code: code, realUserStatus: isFirst ? 2 : nil)
        let token: String
        do {
            guard let minted = try minter.mint(context, now: now, fault: fault) else { throw CryptoError.invalidArgument("no token") }
            token = minted
        } catch { return .json(500, Self.message("signing failed")) }

        var fullName: JSONValue = .null
        if isFirst, scopes.contains("name") {
            var parts: [String: JSONValue] = [:]
            if let first = identity.firstName { parts["givenName"] = .string(first) }
            if let last = identity.lastName { parts["familyName"] = .string(last) }
            fullName = .object(parts)
        }
        return .json(200, JSONValue.object([
            "identityToken": .string(token), "authorizationCode": .string(code), "user": .string(identity.subject),
            "email": isFirst && scopes.contains("email") ? .string(identity.email) : .null, "fullName": fullName,
            "realUserStatus": .integer(isFirst ? 2 : 1),
        ]).jsonText)
    }

    /// The user signing in: the one named by `email` (a known test user keeps their names),
    /// else the auto-approve user, else the first test user.
    private func nativeUser(_ object: [String: JSONValue]) throws(ControlError) -> TestUser {
        var user: TestUser
        if let email = object["email"]?.stringValue {
            guard TestUser.isPlausibleEmail(email) else { throw ControlError("email is not an email address") }
            user = users.first { $0.email == email } ?? TestUser(email: email)
        } else if let chosen = autoApprove ?? users.first {
            user = chosen
        } else {
            throw ControlError("email required (no test users)")
        }
        if let first = object["firstName"]?.stringValue { user.firstName = first }
        if let last = object["lastName"]?.stringValue { user.lastName = last }
        if let hide = object["hideMyEmail"]?.lenientBoolValue { user.hideMyEmail = hide }
        return user
    }

    /// `["name", "email"]` unless the app asked for fewer (`requestedScopes`).
    private func nativeScopes(_ value: JSONValue?) throws(ControlError) -> [String] {
        guard let value, value != .null else { return ["name", "email"] }
        guard case .array(let items) = value else { throw ControlError("scopes must be an array") }
        var scopes: [String] = []
        for item in items {
            guard let scope = item.stringValue, scope == "name" || scope == "email" else {
                throw ControlError("scopes are name and email")
            }
            if !scopes.contains(scope) { scopes.append(scope) }
        }
        return scopes
    }
}
