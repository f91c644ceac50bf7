/// The identity a relying party sees for one authorization.
struct GrantedIdentity: Sendable {
    var subject: String
    /// What the relying party gets: the real address or a private relay one.
    var email: String
    var isPrivateEmail: Bool
    var firstName: String?
    var lastName: String?
    /// The user's `transfer_sub` while the client's transfer window is open.
    var transferSubject: String?
}

/// An issued authorization code (single use, short-lived).
struct IssuedCode {
    var clientID: String
    /// nil for a native app's code (Apple's token endpoint then takes no `redirect_uri`).
    var redirectURI: String?
    var codeChallenge: String?
    var nonce: String?
    var scopes: [String]
    var identity: GrantedIdentity
    var authTime: Int64
    var issuedAt: Int64
    var used = false
}

/// A refresh token and what it stands for.
struct RefreshGrant {
    var clientID: String
    var scopes: [String]
    var identity: GrantedIdentity
    var authTime: Int64
}

/// The emulator's mutable state, bounded: expired codes are swept, and the oldest entries
/// are dropped when a table is full. Touched only on the emulator's loop.
final class EmulatorStore {
    static let maximumCodes = 10_000
    static let maximumGrants = 100_000

    private var codes: [String: IssuedCode] = [:]
    private var codeOrder: [String] = []
    private var grants: [String: RefreshGrant] = [:]
    private var grantOrder: [String] = []
    /// client id + sub → refresh tokens of that authorization. Presence means the user has
    /// authorized the client before (so `user` is not sent again).
    private var consents: [String: Set<String>] = [:]

    // MARK: codes

    func insert(code: String, _ issued: IssuedCode, now: Int64, lifetime: Int64) {
        sweepCodes(now: now, lifetime: lifetime)
        if codes.count >= Self.maximumCodes, let oldest = codeOrder.first {
            codeOrder.removeFirst()
            codes[oldest] = nil
        }
        codes[code] = issued
        codeOrder.append(code)
    }

    func code(_ code: String) -> IssuedCode? { codes[code] }

    func markUsed(_ code: String) { codes[code]?.used = true }

    private func sweepCodes(now: Int64, lifetime: Int64) {
        // Kept past expiry only as long as needed to say "expired" rather than "unknown": a minute.
        while let oldest = codeOrder.first, let issued = codes[oldest], issued.issuedAt + lifetime + 60 < now {
            codeOrder.removeFirst()
            codes[oldest] = nil
        }
        while let oldest = codeOrder.first, codes[oldest] == nil { codeOrder.removeFirst() }
    }

    // MARK: consents and grants

    private static func consentKey(_ clientID: String, _ subject: String) -> String { clientID + "\u{0}" + subject }

    /// Records an authorization; true when it is the user's first for this client.
    func recordAuthorization(clientID: String, subject: String) -> Bool {
        let key = Self.consentKey(clientID, subject)
        if consents[key] != nil { return false }
        if consents.count >= Self.maximumGrants, let any = consents.keys.first { consents[any] = nil }
        consents[key] = []
        return true
    }

    func insert(refreshToken: String, _ grant: RefreshGrant) {
        while let oldest = grantOrder.first, grants[oldest] == nil { grantOrder.removeFirst() }
        if grantOrder.count > 2 * Self.maximumGrants { grantOrder = grantOrder.filter { grants[$0] != nil } }
        if grants.count >= Self.maximumGrants, let oldest = grantOrder.first {
            grantOrder.removeFirst()
            revoke(refreshToken: oldest)
        }
        grants[refreshToken] = grant
        grantOrder.append(refreshToken)
        consents[Self.consentKey(grant.clientID, grant.identity.subject), default: []].insert(refreshToken)
    }

    func grant(_ refreshToken: String) -> RefreshGrant? { grants[refreshToken] }

    /// Revokes a refresh token; once an authorization has no token left it is forgotten, so
    /// the next authorization is a "first" one again (with `user`).
    func revoke(refreshToken: String) {
        guard let grant = grants.removeValue(forKey: refreshToken) else { return }
        let key = Self.consentKey(grant.clientID, grant.identity.subject)
        consents[key]?.remove(refreshToken)
        if consents[key]?.isEmpty == true { consents[key] = nil }
    }

    /// The live refresh tokens of `subject`, counted per client (never the tokens).
    func liveGrants(subject: String) -> [(clientID: String, refreshTokens: Int)] {
        var counts: [String: Int] = [:]
        for grant in grants.values where grant.identity.subject == subject { counts[grant.clientID, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The user removed the app in their Apple ID settings: every token of the authorization
    /// is revoked and the authorization forgotten — for `clientID`, or for every client when
    /// nil. Returns how many tokens were revoked.
    func revokeConsent(clientID: String?, subject: String) -> Int {
        let keys = clientID.map { [Self.consentKey($0, subject)] }
            ?? consents.keys.filter { $0.hasSuffix("\u{0}" + subject) }
        var count = 0
        for key in keys {
            let tokens = consents.removeValue(forKey: key) ?? []
            for token in tokens { grants[token] = nil }
            count += tokens.count
        }
        return count
    }
}
