import SidecarCrypto
import SidecarEvent

/// Moving an app to another team (TN3159): the client-credentials token
/// (`grant_type=client_credentials`, `scope=user.migration`), `POST /auth/usermigrationinfo`
/// for both sides, the transfer itself (`POST /emulator/transfer`, the console's button), and
/// the identities granted meanwhile (the recipient team's `sub`, with `transfer_sub`).
extension AppleEmulator {
    /// The identity `user` gets at `clientID` now: the sub of the team the client belongs to;
    /// during a transfer's window, with the user's `transfer_sub` from the sending team.
    func grantedIdentity(_ user: TestUser, clientID: String, now: Int64) -> GrantedIdentity {
        let team = transfers.team(of: clientID)
        var identity = GrantedIdentity(
            subject: AppleIdentifiers.subject(teamID: team, email: user.email),
            email: user.hideMyEmail ? AppleIdentifiers.relayEmail(teamID: team, email: user.email) : user.email,
            isPrivateEmail: user.hideMyEmail, firstName: user.firstName, lastName: user.lastName)
        if let transfer = transfers.activeTransfer(of: clientID, now: now) {
            identity.transferSubject = transfers.transferSubject(
                fromTeam: transfer.fromTeam, toTeam: transfer.toTeam, email: user.email, hideMyEmail: user.hideMyEmail)
        }
        transfers.noteIdentity(team: team, subject: identity.subject, email: user.email, hideMyEmail: user.hideMyEmail)
        return identity
    }

    /// The teams whose secrets may ask for a migration token: the client's team now, and the
    /// sending team while a transfer's window is open.
    func migrationTeams(of clientID: String, now: Int64) -> [String] {
        [transfers.team(of: clientID)] + (transfers.activeTransfer(of: clientID, now: now).map { [$0.fromTeam] } ?? [])
    }

    /// `grant_type=client_credentials` with `scope=user.migration`: an access token for
    /// `/auth/usermigrationinfo`, bound to the client and to the team whose secret asked.
    func migrationAccessToken(_ form: [String: String], clientID: String, now: Int64) throws(OAuthError) -> ServiceResponse {
        guard form["scope"] == "user.migration" else { throw OAuthError("invalid_scope", "scope must be user.migration") }
        guard let secret = form["client_secret"] else { throw .invalidRequest("client_secret required") }
        let team = migrationTeams(of: clientID, now: now).first { team in
            (try? secretVerifier.forTeam(team).verify(secret, clientID: clientID, now: now)) != nil
        } ?? transfers.team(of: clientID)
        let token: String
        do { token = try transfers.issueAccessToken(clientID: clientID, team: team, now: now) } catch {
            throw OAuthError("server_error").with(status: 500)
        }
        return .json(200, JSONValue.object([
            "access_token": .string(token), "token_type": .string("Bearer"),
            "expires_in": .integer(EmulatorTransfers.accessTokenSeconds),
        ]).jsonText)
    }

    func userMigrationInfo(_ request: ServiceRequest, respond: @escaping (ServiceResponse) -> Void) {
        let fault = faults.isEmpty ? nil : faults.removeFirst()
        if let fault { logger.info("usermigrationinfo answered with an armed fault", metadata: ["fault": "\(fault.name)"]) }
        switch fault {
        case .hang?: return
        case .http500?: respond(.html(500, "<html><body><h1>Internal Server Error</h1></body></html>"))
        case .invalidGrant?: respond(OAuthError("invalid_grant").response)
        case .invalidClient?: respond(OAuthError("invalid_client").response)
        case .invalidRequest?: respond(OAuthError("invalid_request").response)
        case .http502HTML?:
            respond(.html(502, "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"))
        case .malformedJSON?: respond(.json(200, #"{"transfer_sub":"#))
        case .slow(let ms)?: delay(migrationAnswer(request), milliseconds: ms, then: respond)
        default: respond(migrationAnswer(request))
        }
    }

    /// The sending team: `sub` + `target` (the recipient's team id) → `transfer_sub`. The
    /// recipient, once the app is theirs: `transfer_sub` → its `sub` in their team, and for a
    /// private relay user the new relay address.
    private func migrationAnswer(_ request: ServiceRequest) -> ServiceResponse {
        let now = options.clock()
        do throws(OAuthError) {
            let form = try formBody(request)
            guard let token = Self.bearerToken(request), let grant = transfers.accessGrant(token, now: now) else {
                throw OAuthError("invalid_grant", "a client-credentials access token (scope user.migration) is required")
            }
            let clientID = try authenticateClient(form, now: now, teams: [grant.team])
            guard grant.clientID == clientID else { throw OAuthError("invalid_grant", "the access token is another client's") }
            switch (form["sub"], form["transfer_sub"]) {
            case (let sub?, nil):
                return try transferSubject(of: sub, target: form["target"], grant: grant, now: now)
            case (nil, let transferSubject?):
                return try exchange(transferSubject, grant: grant, now: now)
            default:
                throw OAuthError.invalidRequest("exactly one of sub (with target) or transfer_sub")
            }
        } catch {
            logger.info("usermigrationinfo refused", metadata: ["error": "\(error.code)", "why": "\(error.description ?? "")"])
            return error.response
        }
    }

    private func transferSubject(of sub: String, target: String?, grant: EmulatorTransfers.AccessGrant,
                                 now: Int64) throws(OAuthError) -> ServiceResponse {
        guard let target, Self.isTeamID(target) else { throw .invalidRequest("target must be the recipient's team id") }
        guard target != grant.team else { throw .invalidRequest("target is the sending team itself") }
        let owns = transfers.team(of: grant.clientID) == grant.team
            || transfers.activeTransfer(of: grant.clientID, now: now)?.fromTeam == grant.team
        guard owns else { throw OAuthError("invalid_grant", "the team no longer owns the client") }
        guard let user = user(team: grant.team, subject: sub) else {
            throw .invalidRequest("no user with this sub has authorized the team's apps")
        }
        let minted = transfers.transferSubject(
            fromTeam: grant.team, toTeam: target, email: user.email, hideMyEmail: user.hideMyEmail)
        return .json(200, JSONValue.object(["transfer_sub": .string(minted)]).jsonText)
    }

    private func exchange(_ transferSubject: String, grant: EmulatorTransfers.AccessGrant,
                          now: Int64) throws(OAuthError) -> ServiceResponse {
        guard let minted = transfers.minted(transferSubject), minted.toTeam == grant.team else {
            throw .invalidRequest("unknown transfer_sub, or minted for another team")
        }
        guard let transfer = transfers.activeTransfer(of: grant.clientID, now: now), transfer.toTeam == grant.team,
              transfer.fromTeam == minted.fromTeam
        else { throw OAuthError("invalid_grant", "the app has not been transferred to this team, or the window closed") }
        let sub = AppleIdentifiers.subject(teamID: grant.team, email: minted.email)
        transfers.noteIdentity(team: grant.team, subject: sub, email: minted.email, hideMyEmail: minted.hideMyEmail)
        var body: [String: JSONValue] = ["sub": .string(sub)]
        if minted.hideMyEmail {
            body["email"] = .string(AppleIdentifiers.relayEmail(teamID: grant.team, email: minted.email))
            body["is_private_email"] = .bool(true)
        }
        return .json(200, JSONValue.object(body).jsonText)
    }

    /// A user of `team` by sub: one the emulator granted, or a test user (indexed once per
    /// team and list of users).
    private func user(team: String, subject: String) -> (email: String, hideMyEmail: Bool)? {
        if let known = transfers.identity(team: team, subject: subject) { return known }
        guard !indexedUserTeams.contains(team) else { return nil }
        indexedUserTeams.insert(team)
        for user in users {
            transfers.noteIdentity(team: team, subject: AppleIdentifiers.subject(teamID: team, email: user.email),
                                   email: user.email, hideMyEmail: user.hideMyEmail)
        }
        return transfers.identity(team: team, subject: subject)
    }

    /// `POST /emulator/transfer {"client_id", "team_id"}`: App Store Connect's transfer.
    func transferClient(_ body: JSONValue) throws(ControlError) -> ServiceResponse {
        guard let object = body.objectValue, let clientID = object["client_id"]?.stringValue,
              let team = object["team_id"]?.stringValue
        else { throw ControlError("expected {\"client_id\", \"team_id\"}") }
        guard options.client(clientID) != nil else { throw ControlError("unknown client \(clientID)") }
        guard Self.isTeamID(team) else { throw ControlError("team_id must be 10 upper-case letters or digits") }
        let transfer = try transfers.transfer(clientID, to: team, now: options.clock())
        logger.info("client transferred", metadata: [
            "client_id": "\(clientID)", "from": "\(transfer.fromTeam)", "to": "\(transfer.toTeam)",
        ])
        return .json(200, Self.json(transfer).jsonText)
    }

    /// `POST /emulator/transfer/age {"client_id", "days"}`: the client's last transfer made
    /// that many days earlier (`seconds` instead, for a window's last seconds).
    func ageTransfer(_ body: JSONValue) throws(ControlError) -> ServiceResponse {
        guard let object = body.objectValue, let clientID = object["client_id"]?.stringValue else {
            throw ControlError("expected {\"client_id\", \"days\" or \"seconds\"}")
        }
        let seconds: Int64
        if let days = object["days"]?.integerValue, object["seconds"] == nil {
            seconds = days * 86_400
        } else if let count = object["seconds"]?.integerValue, object["days"] == nil {
            seconds = count
        } else {
            throw ControlError("expected one of \"days\" or \"seconds\", an integer")
        }
        let transfer = try transfers.age(clientID, by: seconds)
        logger.info("transfer aged", metadata: ["client_id": "\(clientID)", "seconds": "\(seconds)"])
        return .json(200, Self.json(transfer).jsonText)
    }

    func transfersJSON() -> ServiceResponse {
        .json(200, JSONValue.array(transfers.all.map(Self.json)).jsonText)
    }

    static func json(_ transfer: EmulatorTransfers.Transfer) -> JSONValue {
        .object([
            "client_id": .string(transfer.clientID), "from_team": .string(transfer.fromTeam),
            "to_team": .string(transfer.toTeam), "at": .integer(transfer.at),
            "window_ends": .integer(transfer.at + EmulatorTransfers.windowSeconds),
        ])
    }

    /// Apple's team ids: 10 upper-case letters and digits.
    static func isTeamID(_ text: String) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }
    }

    private static func bearerToken(_ request: ServiceRequest) -> String? {
        let fields = request.headers("authorization")
        guard fields.count == 1, fields[0].utf8.count > 7, fields[0].prefix(7).lowercased() == "bearer " else { return nil }
        let token = String(fields[0].dropFirst(7))
        return token.isEmpty || token.contains(" ") ? nil : token
    }
}
