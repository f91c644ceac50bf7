import Glibc
import SidecarCrypto
import SidecarEvent

/// What an operator needs to test the account lifecycle in CI: a user's consent
/// revoked (their refresh tokens then fail with `invalid_grant`), a signed notification of any
/// type built — and, with `"url"`, delivered — as Apple sends them, and the log of what
/// `/auth/revoke` received.
extension AppleEmulator {
    /// How many `/auth/revoke` requests `GET /emulator/revocations` keeps (oldest dropped).
    static let keptRevocations = 50

    /// `POST /emulator/revoke-consent {"email"|"sub", "client_id"?}`: the user removes the app
    /// in their Apple ID settings — for one client, or for every client of the team without
    /// `client_id` (what removing "Sign in with Apple" for the developer does).
    func revokeConsent(_ body: JSONValue) throws(ControlError) -> ServiceResponse {
        guard let object = body.objectValue else { throw ControlError("expected {\"email\"|\"sub\", \"client_id\"?}") }
        let subject: String
        if let sub = object["sub"]?.stringValue, !sub.isEmpty {
            subject = sub
        } else if let email = object["email"]?.stringValue, TestUser.isPlausibleEmail(email) {
            subject = AppleIdentifiers.subject(teamID: options.teamID, email: email)
        } else {
            throw ControlError("expected {\"email\"|\"sub\", \"client_id\"?}")
        }
        let clientID = object["client_id"]?.stringValue
        if let clientID, options.client(clientID) == nil { throw ControlError("unknown client_id \(clientID)") }
        let count = store.revokeConsent(clientID: clientID, subject: subject)
        logger.info("consent revoked", metadata: ["sub": "\(subject)", "tokens": "\(count)"])
        return .json(200, JSONValue.object(["sub": .string(subject), "revoked_tokens": .integer(Int64(count))]).jsonText)
    }

    /// `POST /emulator/grants {"email"|"sub"}`: the user's live refresh tokens per client
    /// (counted, never shown) — what `/auth/revoke` and a revoked consent take away.
    func liveGrants(_ body: JSONValue) throws(ControlError) -> ServiceResponse {
        let subject: String
        if let sub = body.objectValue?["sub"]?.stringValue, !sub.isEmpty {
            subject = sub
        } else if let email = body.objectValue?["email"]?.stringValue, TestUser.isPlausibleEmail(email) {
            subject = AppleIdentifiers.subject(teamID: options.teamID, email: email)
        } else {
            throw ControlError("expected {\"email\"|\"sub\"}")
        }
        let grants = store.liveGrants(subject: subject).map { grant in
            JSONValue.object(["client_id": .string(grant.clientID), "refresh_tokens": .integer(Int64(grant.refreshTokens))])
        }
        return .json(200, JSONValue.object(["sub": .string(subject), "grants": .array(grants)]).jsonText)
    }

    /// `POST /emulator/notify`: the signed payload; with `"url"`, the emulator POSTs
    /// `{"payload": JWT}` there itself, as Apple would, and answers with the status it got.
    func notify(_ body: JSONValue, respond: @escaping (ServiceResponse) -> Void) {
        let payload: String
        do { payload = try notificationPayload(body) } catch { return respond(.json(400, Self.message(error.message))) }
        let answer = JSONValue.object(["payload": .string(payload)])
        guard let url = body.objectValue?["url"] else { return respond(.json(200, answer.jsonText)) }
        guard let text = url.stringValue, let target = Self.pushTarget(text) else {
            return respond(.json(400, Self.message("url must be an absolute http(s) URL")))
        }
        // The control API has no authentication: without the flag, whoever reaches it must not
        // make the emulator post to other machines. The host counts as written (an IP literal,
        // or `localhost`), never as a lookup resolves it, so a name cannot later point elsewhere.
        guard target.endpoint.isLoopback || options.allowNotifyToAnyHost else {
            return respond(.json(403, Self.message(
                "notify posts only to localhost, 127.0.0.0/8 or [::1], not to \(target.endpoint.host); "
                    + "start the emulator with --allow-notify-to-any-host to allow other hosts")))
        }
        let client: AppleHTTPClient
        do {
            client = try AppleHTTPClient(
                base: loop.base, configuration: .init(endpoint: target.endpoint, connectTimeout: 5, totalTimeout: 10))
        } catch {
            return respond(.json(500, Self.message("no HTTP client: \(error)")))
        }
        let request = AppleHTTPRequest(
            method: .POST, path: target.path, contentType: "application/json", body: Array(answer.jsonText.utf8))
        client.send(request) { [logger] result in
            _ = client  // kept alive until the exchange ends
            var report: [String: JSONValue] = ["payload": .string(payload), "url": .string(text)]
            switch result {
            case .response(let response):
                report["status"] = .integer(Int64(response.status))
                report["delivered"] = .bool((200..<300).contains(response.status))
                report["body"] = .string(String(decoding: response.body.prefix(2048), as: UTF8.self))
            case .failure(let failure):
                report["delivered"] = .bool(false)
                report["error"] = .string(failure.reason)
            }
            logger.info("notification pushed", metadata: [
                "url": "\(text)", "status": "\(report["status"]?.integerValue.map(String.init) ?? "none")",
            ])
            respond(.json(200, JSONValue.object(report).jsonText))
        }
    }

    /// A server-to-server notification JWT as Apple sends it: RS256 with the published keys,
    /// `events` a JSON *string*, `event_time` in milliseconds.
    private func notificationPayload(_ body: JSONValue) throws(ControlError) -> String {
        guard let object = body.objectValue else { throw ControlError("expected a JSON object") }
        let known = ["email-disabled", "email-enabled", "consent-revoked", "account-delete", "account-deleted"]
        guard let type = object["type"]?.stringValue, known.contains(type) else {
            throw ControlError("type must be one of \(known.joined(separator: ", "))")
        }
        let subject: String
        if let sub = object["sub"]?.stringValue, !sub.isEmpty {
            subject = sub
        } else if let email = object["user_email"]?.stringValue, TestUser.isPlausibleEmail(email) {
            subject = AppleIdentifiers.subject(teamID: options.teamID, email: email)
        } else {
            throw ControlError("sub (or user_email, the test user's address) required")
        }
        guard let audience = object["aud"]?.stringValue ?? options.clients.first?.id else {
            throw ControlError("aud required (no client configured)")
        }
        let (now, eventTime) = Self.eventTime(clock: options.clock)
        var event: [String: JSONValue] = [
            "type": .string(type), "sub": .string(subject),
            "event_time": .integer(object["event_time"]?.integerValue ?? eventTime),
        ]
        if let email = object["email"]?.stringValue { event["email"] = .string(email) }
        if let isPrivate = object["is_private_email"]?.lenientBoolValue {
            event["is_private_email"] = .string(isPrivate ? "true" : "false")
        }
        do {
            let claims: [String: JSONValue] = [
                "iss": .string(options.issuer), "aud": .string(audience), "iat": .integer(now),
                "exp": .integer(now + 86_400), "jti": .string(Base64URL.encode(try SecureRandom.bytes(16))),
                "events": .string(JSONValue.object(event).jsonText),
            ]
            return try minter.sign(claims)
        } catch { throw ControlError("signing failed") }
    }

    /// `http(s)://host[:port]/path?query` → where to connect and the request target.
    static func pushTarget(_ url: String) -> (endpoint: AppleEndpoint, path: String)? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        guard rest[authorityEnd...].firstIndex(of: "#") == nil,
              let endpoint = try? AppleEndpoint(baseURL: String(url[..<authorityEnd]), allowPlainHTTP: true)
        else { return nil }
        let path = String(rest[authorityEnd...])
        return (endpoint, path.isEmpty ? "/" : path.hasPrefix("?") ? "/" + path : path)
    }

    /// One line of `GET /emulator/revocations`: who asked, with which hint, and whether the
    /// token was one the emulator issued to that client (never the token itself).
    func noteRevocation(_ form: [String: String], clientAuthenticated: Bool, grantClientID: String??, error: String?) {
        var entry: [String: JSONValue] = [
            "time": .integer(options.clock()), "client_authenticated": .bool(clientAuthenticated),
        ]
        if let clientID = form["client_id"] { entry["client_id"] = .string(clientID) }
        if let hint = form["token_type_hint"] { entry["token_type_hint"] = .string(hint) }
        if let grantClientID {
            entry["token_known"] = .bool(grantClientID != nil && grantClientID == form["client_id"])
            // Issued to another client: Apple does not revoke it for this one.
            if let other = grantClientID, other != form["client_id"] { entry["token_client_mismatch"] = .bool(true) }
        }
        if let error { entry["error"] = .string(error) }
        if revocations.count >= Self.keptRevocations { revocations.removeFirst() }
        revocations.append(.object(entry))
    }
}

extension AppleEmulator {
    /// The emulator's second, and an event time in milliseconds as Apple's are. On the wall
    /// clock it is the wall clock's own reading, taken on the same side of a second's turn as
    /// the second (a second read before the turn with a millisecond read after it dated an
    /// event up to a second early: before a sign-in made just before it, which it then did not
    /// revoke). On another clock (tests, a clock set ahead) it is that clock's second with the
    /// wall clock's millisecond within it.
    static func eventTime(clock: () -> Int64) -> (now: Int64, milliseconds: Int64) {
        let before = wallMilliseconds()
        let now = clock()
        let after = wallMilliseconds()
        if now == before / 1000 { return (now, before) }
        if now == after / 1000 { return (now, after) }
        return (now, now * 1000 + after % 1000)
    }

    private static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000)
    }
}
