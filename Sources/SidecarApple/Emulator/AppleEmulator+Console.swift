import Foundation
import SidecarCrypto
import SidecarEvent

/// The console's forms: each becomes one call of the JSON control API (the same code the
/// tests drive), its outcome goes to the console's log, and the browser is sent back to the
/// console (303), so a reload never repeats an action.
extension AppleEmulator {
    func console() -> ServiceResponse {
        EmulatorConsole.page(EmulatorConsole.State(
            issuer: options.issuer, teamID: options.teamID, users: users, autoApprove: autoApprove,
            faults: faults.map(\.name), kids: keys.keys.map(\.kid), clients: options.clients, transfers: transfers.all,
            log: consoleLog))
    }

    func consoleAction(_ request: ServiceRequest, respond: @escaping (ServiceResponse) -> Void) {
        // The emulator is a local test tool, but a page elsewhere must still not drive it:
        // only a form from the console itself (same origin) is accepted.
        guard RequestSite(request, ownOrigin: ownOrigin) == .sameOrigin else {
            return respond(.text(403, "console actions are accepted only from the console's own page\n"))
        }
        guard let form = try? FormCoding.parameters(String(decoding: request.body, as: UTF8.self), plusIsSpace: true),
              let action = form["action"] else {
            return respond(.text(400, "expected a console form\n"))
        }
        let call: (method: String, path: String, body: JSONValue?)
        switch action {
        case "add-user":
            var list = users.map(Self.json)
            list.append(Self.json(TestUser(
                email: form["email"] ?? "", firstName: form["first_name"].flatMap { $0.isEmpty ? nil : $0 },
                lastName: form["last_name"].flatMap { $0.isEmpty ? nil : $0 }, hideMyEmail: form["hide_email"] == "1")))
            call = ("POST", "/emulator/users", .array(list))
        case "auto-approve":
            let email = form["email"] ?? ""
            let user = users.first { $0.email == email }
            call = ("POST", "/emulator/auto-approve", email.isEmpty ? .null : user.map(Self.json) ?? .object(["email": .string(email)]))
        case "arm-fault":
            call = ("POST", "/emulator/faults", .object(["fault": .string(form["fault"] ?? "")]))
        case "disarm-faults":
            call = ("DELETE", "/emulator/faults", nil)
        case "rotate-keys":
            call = ("POST", "/emulator/rotate-keys", nil)
        case "revoke-consent":
            call = ("POST", "/emulator/revoke-consent", .object(["email": .string(form["email"] ?? "")]))
        case "notify":
            var body: [String: JSONValue] = [
                "type": .string(form["type"] ?? ""), "user_email": .string(form["email"] ?? ""),
                "url": .string(form["url"] ?? ""),
            ]
            if let aud = form["aud"], !aud.isEmpty { body["aud"] = .string(aud) }
            call = ("POST", "/emulator/notify", .object(body))
        case "transfer":
            call = ("POST", "/emulator/transfer", .object([
                "client_id": .string(form["client_id"] ?? ""), "team_id": .string(form["team_id"] ?? ""),
            ]))
        default:
            return respond(.text(400, "unknown console action\n"))
        }
        control(method: call.method, path: call.path, body: Array((call.body?.jsonText ?? "").utf8)) { [self] answer in
            note(Self.outcome(of: action, form: form, answer: answer))
            var back = ServiceResponse(status: 303, headers: [("Location", "/emulator"), ("Cache-Control", "no-store")])
            back.body = []
            respond(back)
        }
    }

    private func note(_ entry: EmulatorConsole.Entry) {
        consoleLog.insert(entry, at: 0)
        if consoleLog.count > 20 { consoleLog.removeLast() }
        logger.info("console", metadata: ["outcome": "\(entry.text)"])
    }

    /// One line for the console's log: what was done, or the control API's error.
    private static func outcome(of action: String, form: [String: String], answer: ServiceResponse) -> EmulatorConsole.Entry {
        let json = try? JSONDecoder().decode(JSONValue.self, from: Data(answer.body))
        guard (200..<300).contains(answer.status) else {
            return .init(ok: false, text: "\(action) failed: \(json?.objectValue?["error"]?.stringValue ?? "status \(answer.status)")")
        }
        let object = json?.objectValue ?? [:]
        switch action {
        case "add-user": return .init(ok: true, text: "Added \(form["email"] ?? "").")
        case "auto-approve":
            let email = form["email"] ?? ""
            return .init(ok: true, text: email.isEmpty ? "Auto-approval is off." : "Every sign-in is now approved as \(email).")
        case "arm-fault", "disarm-faults":
            var armed: [String] = []
            if case .array(let items)? = object["armed"] { armed = items.compactMap(\.stringValue) }
            return .init(ok: true, text: "Faults armed: \(armed.isEmpty ? "none" : armed.joined(separator: ", ")).")
        case "rotate-keys": return .init(ok: true, text: "New signing key \(object["kid"]?.stringValue ?? "").")
        case "revoke-consent":
            return .init(ok: true, text: "Consent revoked for \(form["email"] ?? ""): "
                + "\(object["revoked_tokens"]?.integerValue ?? 0) refresh token(s) now fail with invalid_grant.")
        case "notify":
            let event = "\(form["type"] ?? "") for \(form["email"] ?? "")"
            if let status = object["status"]?.integerValue {
                let delivered = object["delivered"] == .bool(true)
                return .init(ok: delivered, text: "Sent \(event) to \(form["url"] ?? ""): HTTP \(status)"
                    + (delivered ? ", accepted." : ", refused: \(object["body"]?.stringValue?.prefix(200) ?? "")"))
            }
            return .init(ok: false, text: "Sending \(event) failed: \(object["error"]?.stringValue ?? "no answer").")
        case "transfer":
            return .init(ok: true, text: "\(form["client_id"] ?? "") moved from team \(object["from_team"]?.stringValue ?? "") "
                + "to \(object["to_team"]?.stringValue ?? ""): transfer_sub in id_tokens for 60 days.")
        default: return .init(ok: true, text: "\(action): done.")
        }
    }
}
