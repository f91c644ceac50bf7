import SidecarCrypto

/// The emulator's model of an app transfer between developer teams (App Store Connect's
/// "Transfer App", Apple's TN3159): which team each client belongs to now, the transfers made
/// and their 60-day windows, the `transfer_sub`s minted, and the client-credentials access
/// tokens (`scope=user.migration`) that `/auth/usermigrationinfo` requires. Touched only on
/// the emulator's loop; every table is bounded.
final class EmulatorTransfers {
    /// How long after a transfer `usermigrationinfo` answers and id_tokens carry `transfer_sub`.
    static let windowSeconds: Int64 = 60 * 86_400
    /// A client-credentials access token lives an hour, as Apple's do.
    static let accessTokenSeconds: Int64 = 3_600
    static let maximumEntries = 200_000

    struct Transfer: Sendable, Equatable {
        let clientID: String
        let fromTeam: String
        let toTeam: String
        let at: Int64
    }

    /// What a `transfer_sub` stands for: the user (by address) moving between two teams.
    struct Minted {
        let fromTeam: String
        let toTeam: String
        let email: String
        let hideMyEmail: Bool
    }

    struct AccessGrant {
        let clientID: String
        let team: String
        let expiresAt: Int64
    }

    let originalTeam: String
    private var transfers: [String: Transfer] = [:]
    private var minted: [String: Minted] = [:]
    private var accessTokens: [String: AccessGrant] = [:]
    /// Team + sub → the user, for every identity the emulator granted (a sending team names
    /// its users by sub only).
    private var identities: [String: (email: String, hideMyEmail: Bool)] = [:]

    init(originalTeam: String) {
        self.originalTeam = originalTeam
    }

    /// The team `clientID` belongs to now.
    func team(of clientID: String) -> String { transfers[clientID]?.toTeam ?? originalTeam }

    /// The client's last transfer, while its window is open.
    func activeTransfer(of clientID: String, now: Int64) -> Transfer? {
        guard let transfer = transfers[clientID], now < transfer.at + Self.windowSeconds else { return nil }
        return transfer
    }

    /// Every transfer made, for the control API.
    var all: [Transfer] { transfers.values.sorted { $0.at < $1.at } }

    /// Moves `clientID` to `team`. A client moves again only once its window closed: Apple
    /// keeps one transfer's identifiers valid for sixty days.
    func transfer(_ clientID: String, to team: String, now: Int64) throws(ControlError) -> Transfer {
        let from = self.team(of: clientID)
        guard team != from else { throw ControlError("\(clientID) already belongs to team \(team)") }
        if let open = activeTransfer(of: clientID, now: now) {
            throw ControlError("\(clientID) moved to \(open.toTeam) less than 60 days ago; its window is still open")
        }
        let transfer = Transfer(clientID: clientID, fromTeam: from, toTeam: team, at: now)
        transfers[clientID] = transfer
        return transfer
    }

    /// Moves the client's last transfer `seconds` into the past, as if that much time had
    /// gone by since (the emulator's control API: a test sees the window close without
    /// waiting sixty days, while every token keeps the real clock).
    func age(_ clientID: String, by seconds: Int64) throws(ControlError) -> Transfer {
        guard let transfer = transfers[clientID] else { throw ControlError("\(clientID) was never transferred") }
        guard seconds > 0, seconds <= 10 * Self.windowSeconds else {
            throw ControlError("age by 1 second to \(10 * Self.windowSeconds / 86_400) days")
        }
        let aged = Transfer(clientID: clientID, fromTeam: transfer.fromTeam, toTeam: transfer.toTeam, at: transfer.at - seconds)
        transfers[clientID] = aged
        return aged
    }

    // MARK: identities and transfer identifiers

    func noteIdentity(team: String, subject: String, email: String, hideMyEmail: Bool) {
        let key = team + "\u{0}" + subject
        guard identities[key] == nil else { return }
        if identities.count >= Self.maximumEntries, let any = identities.keys.first { identities[any] = nil }
        identities[key] = (email, hideMyEmail)
    }

    func identity(team: String, subject: String) -> (email: String, hideMyEmail: Bool)? {
        identities[team + "\u{0}" + subject]
    }

    /// The user's `transfer_sub` from `fromTeam` to `toTeam`: the same every time it is asked
    /// for, remembered so the recipient can exchange it.
    func transferSubject(fromTeam: String, toTeam: String, email: String, hideMyEmail: Bool) -> String {
        let subject = AppleIdentifiers.subject(teamID: "transfer\u{0}\(fromTeam)\u{0}\(toTeam)", email: email)
        if minted[subject] == nil {
            if minted.count >= Self.maximumEntries, let any = minted.keys.first { minted[any] = nil }
            minted[subject] = Minted(fromTeam: fromTeam, toTeam: toTeam, email: email, hideMyEmail: hideMyEmail)
        }
        return subject
    }

    func minted(_ transferSubject: String) -> Minted? { minted[transferSubject] }

    // MARK: client-credentials access tokens

    func issueAccessToken(clientID: String, team: String, now: Int64) throws(CryptoError) -> String {
        if accessTokens.count >= Self.maximumEntries {
            accessTokens = accessTokens.filter { $0.value.expiresAt > now }
            if accessTokens.count >= Self.maximumEntries, let any = accessTokens.keys.first { accessTokens[any] = nil }
        }
        let token = try AppleIdentifiers.token(prefix: "m")
        accessTokens[token] = AccessGrant(clientID: clientID, team: team, expiresAt: now + Self.accessTokenSeconds)
        return token
    }

    /// The grant behind an unexpired access token.
    func accessGrant(_ token: String, now: Int64) -> AccessGrant? {
        guard let grant = accessTokens[token], grant.expiresAt > now else { return nil }
        return grant
    }
}
