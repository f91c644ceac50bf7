import Foundation
import SidecarCrypto
import SidecarEvent

/// Test-control endpoints under `/emulator/` (only on the emulator; unauthenticated, so bind
/// it to loopback). Bodies and answers are JSON.
extension AppleEmulator {
    static let controlHelp = """
    Apple emulator test controls (JSON bodies, sent as Content-Type: application/json; requests that change
    state are refused from other sites, by Origin or Sec-Fetch-Site):
      GET  /emulator/users            known test users
      POST /emulator/users            replace them: [{"email", "firstName"?, "lastName"?, "hideMyEmail"?}]
      GET  /emulator/auto-approve     the user every authorization is approved as (null: show the page)
      POST /emulator/auto-approve     {"email", "firstName"?, "lastName"?, "hideMyEmail"?} or null
      GET  /emulator/faults           faults armed for the next /auth/token and /auth/usermigrationinfo requests
      POST /emulator/faults           {"fault": NAME} or {"faults": [NAME, …]}; one is used per such request
      DELETE /emulator/faults         disarm all
      POST /emulator/rotate-keys      a new signing key; previous keys stay published
      POST /emulator/notify           {"type", "sub" | "user_email", "aud"?, "email"?, "is_private_email"?,
                                      "event_time"?, "url"?} -> {"payload": JWT}: a server-to-server notification
                                      signed like Apple's (type: consent-revoked, account-delete, account-deleted,
                                      email-disabled, email-enabled; event_time in ms). With "url" the emulator POSTs
                                      {"payload": JWT} there itself and adds "status", "delivered" and "body" (or
                                      "error") to the answer; only to localhost, 127.0.0.0/8 or [::1] unless the
                                      emulator was started with --allow-notify-to-any-host
      POST /emulator/revoke-consent   {"email" | "sub", "client_id"?} -> {"sub", "revoked_tokens"}: the user removes
                                      the app in their Apple ID settings (every client of the team without client_id);
                                      their refresh tokens then fail with invalid_grant
      POST /emulator/grants           {"email" | "sub"} -> {"sub", "grants": [{"client_id", "refresh_tokens"}]}: the
                                      user's live refresh tokens per client, counted (never shown)
      GET  /emulator/revocations      the last /auth/revoke requests: client_id, token_type_hint, token_known (issued
                                      to that client and not yet revoked), client_authenticated, error (never tokens)
      POST /emulator/native           {"client_id", "email"?, "firstName"?, "lastName"?, "hideMyEmail"?, "nonce"?,
                                      "scopes"?, "fault"?} -> {"identityToken", "authorizationCode", "user", "email",
                                      "fullName", "realUserStatus"}: what an iOS/macOS app gets from Sign in with Apple
                                      for client_id (its bundle id, registered with --client BUNDLE_ID). The code is
                                      exchanged at /auth/token with that client_id and no redirect_uri; email and
                                      fullName come on the first authorization only; the nonce is copied as given;
                                      "fault" spoils the identity token (an id_token fault name)
      GET  /emulator/token-requests   the last token requests: grant_type, client_id, redirect_uri, field names and
                                      whether the client secret verified (never secret values)
      POST /emulator/transfer         {"client_id", "team_id"} -> {"client_id", "from_team", "to_team", "at",
                                      "window_ends"}: the app moves to another team (App Store Connect's transfer).
                                      From then on its client secrets must name the new team, its users get that
                                      team's subs, and for 60 days their id_tokens carry transfer_sub and
                                      /auth/usermigrationinfo exchanges transfer_subs for the new subs
      POST /emulator/transfer/age     {"client_id", "days" or "seconds"} -> the transfer: made that much earlier, so
                                      its 60-day window closes without waiting (tokens keep the real clock)
      GET  /emulator/transfers        the transfers made
    Fault names: \(EmulatorFault.allNames.joined(separator: ", "))
    Per request, GET /auth/authorize?…&emulator_auto_approve=EMAIL skips the page.

    """

    /// Answers a control request; only `POST /emulator/notify` with a `url` answers later
    /// (after its own delivery).
    func control(_ request: ServiceRequest, respond: @escaping (ServiceResponse) -> Void) {
        switch (request.method, request.path) {
        case ("GET", "/emulator"), ("GET", "/emulator/"), ("HEAD", "/emulator"), ("HEAD", "/emulator/"):
            // A browser gets the console; scripts and tests keep the endpoint list.
            let wantsPage = request.headers("accept").contains { $0.lowercased().contains("text/html") }
            respond(wantsPage ? console() : .text(200, Self.controlHelp))
        case ("POST", EmulatorConsole.actionPath):
            // Form-encoded by design; `consoleAction` demands proof of the console's own origin.
            consoleAction(request, respond: respond)
        case ("GET", _), ("HEAD", _):
            control(method: request.method, path: request.path, body: request.body, respond: respond)
        default:
            if let refusal = controlRefusal(request) { return respond(refusal) }
            control(method: request.method, path: request.path, body: request.body, respond: respond)
        }
    }

    /// The JSON control API, shared by its HTTP endpoints and the console's forms.
    func control(method: String, path: String, body: [UInt8], respond: @escaping (ServiceResponse) -> Void) {
        guard method == "POST", path == "/emulator/notify" else {
            return respond(control(method: method, path: path, body: body))
        }
        do throws(ControlError) {
            notify(try jsonBody(body), respond: respond)
        } catch {
            respond(.json(400, Self.message(error.message)))
        }
    }

    private func control(method: String, path: String, body request: [UInt8]) -> ServiceResponse {
        let route = (method, path)
        do throws(ControlError) {
            switch route {
            case ("GET", "/emulator/users"):
                return .json(200, JSONValue.array(users.map(Self.json)).jsonText)
            case ("POST", "/emulator/users"):
                guard case .array(let items) = try jsonBody(request) else { throw ControlError("expected an array of users") }
                var parsed: [TestUser] = []
                for item in items { parsed.append(try Self.user(item)) }
                users = parsed
                return .json(200, JSONValue.array(users.map(Self.json)).jsonText)
            case ("GET", "/emulator/auto-approve"):
                return .json(200, autoApprove.map(Self.json)?.jsonText ?? "null")
            case ("POST", "/emulator/auto-approve"):
                let body = try jsonBody(request)
                autoApprove = body == .null || body == .object([:]) ? nil : try Self.user(body)
                return .json(200, autoApprove.map(Self.json)?.jsonText ?? "null")
            case ("GET", "/emulator/faults"):
                return armedFaults()
            case ("POST", "/emulator/faults"):
                let body = try jsonBody(request).objectValue ?? [:]
                let names: [JSONValue] = body["faults"].flatMap { if case .array(let a) = $0 { a } else { nil } }
                    ?? body["fault"].map { [$0] } ?? []
                guard !names.isEmpty else { throw ControlError("expected {\"fault\": NAME} or {\"faults\": [NAME, …]}") }
                var parsed: [EmulatorFault] = []
                for name in names {
                    guard let text = name.stringValue, let fault = EmulatorFault(name: text) else {
                        throw ControlError("unknown fault \(name.jsonText); known: \(EmulatorFault.allNames.joined(separator: ", "))")
                    }
                    parsed.append(fault)
                }
                faults.append(contentsOf: parsed)
                return armedFaults()
            case ("DELETE", "/emulator/faults"):
                faults = []
                return armedFaults()
            case ("POST", "/emulator/rotate-keys"):
                let kid: String
                do { kid = try keys.rotate() } catch { return .json(500, Self.message(error.description)) }
                return .json(200, JSONValue.object([
                    "kid": .string(kid), "kids": .array(keys.keys.map { .string($0.kid) }),
                ]).jsonText)
            case ("POST", "/emulator/native"):
                return try nativeAuthorization(jsonBody(request))
            case ("GET", "/emulator/token-requests"):
                return .json(200, JSONValue.array(tokenRequests).jsonText)
            case ("POST", "/emulator/revoke-consent"):
                return try revokeConsent(jsonBody(request))
            case ("POST", "/emulator/grants"):
                return try liveGrants(jsonBody(request))
            case ("GET", "/emulator/revocations"):
                return .json(200, JSONValue.array(revocations).jsonText)
            case ("POST", "/emulator/transfer"):
                return try transferClient(jsonBody(request))
            case ("POST", "/emulator/transfer/age"):
                return try ageTransfer(jsonBody(request))
            case ("GET", "/emulator/transfers"):
                return transfersJSON()
            default:
                return .json(404, Self.message("unknown control endpoint; GET /emulator lists them"))
            }
        } catch {
            return .json(400, Self.message(error.message))
        }
    }

    private func armedFaults() -> ServiceResponse {
        .json(200, JSONValue.object(["armed": .array(faults.map { .string($0.name) })]).jsonText)
    }

    private func jsonBody(_ body: [UInt8]) throws(ControlError) -> JSONValue {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(body)) else {
            throw ControlError("body must be JSON")
        }
        return value
    }

    private static func user(_ value: JSONValue) throws(ControlError) -> TestUser {
        guard let object = value.objectValue, let email = object["email"]?.stringValue, TestUser.isPlausibleEmail(email) else {
            throw ControlError("a user is {\"email\", \"firstName\"?, \"lastName\"?, \"hideMyEmail\"?} with a valid email")
        }
        return TestUser(email: email, firstName: object["firstName"]?.stringValue, lastName: object["lastName"]?.stringValue,
                        hideMyEmail: object["hideMyEmail"]?.lenientBoolValue ?? false)
    }

    static func json(_ user: TestUser) -> JSONValue {
        var object: [String: JSONValue] = ["email": .string(user.email), "hideMyEmail": .bool(user.hideMyEmail)]
        if let first = user.firstName { object["firstName"] = .string(first) }
        if let last = user.lastName { object["lastName"] = .string(last) }
        return .object(object)
    }

    static func message(_ text: String) -> String { JSONValue.object(["error": .string(text)]).jsonText }
}

struct ControlError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
