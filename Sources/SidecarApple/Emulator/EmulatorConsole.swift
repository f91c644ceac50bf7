import SidecarCrypto
import SidecarEvent
import SidecarHTTP

/// The console at `GET /emulator`: the design of the sidecar's pages, one form per
/// control, every form a same-origin POST to `actionPath`. Builds HTML only; what a form does
/// is `AppleEmulator+Console`.
enum EmulatorConsole {
    static let actionPath = "/emulator/console"
    static let notificationTypes = ["consent-revoked", "account-delete", "account-deleted", "email-disabled", "email-enabled"]
    static let contentSecurityPolicy = PageDesign.contentSecurityPolicy(
        styleHashes: [Base64.encode(SHA256.hash(Array(PageDesign.styleSheet.utf8)))])

    /// What the console shows; a snapshot of the emulator's state.
    struct State {
        var issuer: String
        var teamID: String
        var users: [TestUser]
        var autoApprove: TestUser?
        var faults: [String]
        var kids: [String]
        var clients: [EmulatorClient]
        /// The app transfers made, oldest first.
        var transfers: [EmulatorTransfers.Transfer] = []
        /// The newest first: what the last console actions did.
        var log: [Entry]
    }

    struct Entry {
        var ok: Bool
        var text: String
    }

    static func page(_ state: State) -> ServiceResponse {
        var html = PageDesign.head(title: "Apple emulator console") + "<main class=\"wide\">\n"
        html += "<h1>Apple emulator console</h1>\n"
        html += "<p>A local stand-in for Sign in with Apple at <code>\(e(state.issuer))</code> (team <code>\(e(state.teamID))</code>)."
            + " Not Apple: use it to try the whole flow and test your app.</p>\n"
        html += log(state.log)
        html += users(state)
        html += faults(state)
        html += keys(state)
        html += notifications(state)
        html += transfers(state)
        html += "<p class=\"meta\">Scripts and tests use the JSON control API: <code>curl \(e(state.issuer))/emulator</code>.</p>\n"
        html += "</main>\n</body></html>\n"
        var response = ServiceResponse.html(200, html)
        response.headers.append(("Content-Security-Policy", contentSecurityPolicy))
        response.headers.append(("Referrer-Policy", "no-referrer"))
        response.headers.append(("X-Frame-Options", "DENY"))
        return response
    }

    private static func log(_ entries: [Entry]) -> String {
        guard !entries.isEmpty else { return "" }
        var html = "<div class=\"notice\" id=\"console-log\" role=\"status\" aria-live=\"polite\">"
        for entry in entries.prefix(5) {
            html += "<p class=\"status \(entry.ok ? "good" : "bad")\">\(e(entry.text))</p>"
        }
        return html + "</div>\n"
    }

    private static func users(_ state: State) -> String {
        var html = "<section><h2 id=\"users\">Test users</h2>\n"
        html += "<p>Auto-approval: " + (state.autoApprove.map {
            "<span class=\"status good\" id=\"auto-approve-state\">on, as \(e($0.email))</span>"
        } ?? "<span class=\"status\" id=\"auto-approve-state\">off — Apple's page asks who signs in</span>") + "</p>\n"
        if state.autoApprove != nil {
            html += form("auto-approve", fields: [("email", "")], button: "Turn auto-approval off", id: "auto-approve-off")
        }
        html += "<table><thead><tr><th scope=\"col\">User</th><th scope=\"col\">sub</th><th scope=\"col\">Actions</th></tr></thead><tbody>\n"
        for (index, user) in state.users.enumerated() {
            let name = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
            let subject = AppleIdentifiers.subject(teamID: state.teamID, email: user.email)
            html += "<tr><td>\(e(user.email))" + (name.isEmpty ? "" : "<br>\(e(name))")
                + (user.hideMyEmail ? "<br><small>Hide My Email</small>" : "") + "</td>"
                + "<td><code>\(e(subject))</code></td><td><div class=\"actions\">"
                + form("auto-approve", fields: [("email", user.email)], button: "Approve every sign-in as this user",
                       id: "pick-\(index)")
                + form("revoke-consent", fields: [("email", user.email)], button: "Revoke consent", id: "revoke-\(index)",
                       danger: true)
                + "</div></td></tr>\n"
        }
        html += "</tbody></table>\n"
        html += """
            <h2>Add a test user</h2>
            <form method="post" action="\(actionPath)"><input type="hidden" name="action" value="add-user">
            <div class="grid"><label>Email <input type="email" name="email" id="new-email" required autocomplete="off"></label>
            <label>First name <input type="text" name="first_name" id="new-first-name" autocomplete="off"></label>
            <label>Last name <input type="text" name="last_name" id="new-last-name" autocomplete="off"></label></div>
            <label><input type="checkbox" name="hide_email" value="1" id="new-hide-email">Hide My Email</label>
            <div class="actions"><button type="submit" class="primary" id="add-user">Add user</button></div></form>
            </section>

            """
        return html
    }

    private static func faults(_ state: State) -> String {
        let options = EmulatorFault.allNames.map { "<option value=\"\(e($0))\">\(e($0))</option>" }.joined()
        let armed = state.faults.isEmpty ? "none" : state.faults.map(e).joined(separator: ", ")
        return """
            <section><h2>Faults for the next token responses</h2>
            <p>Armed, in order: <span id="armed-faults">\(armed)</span></p>
            <form method="post" action="\(actionPath)" class="actions"><input type="hidden" name="action" value="arm-fault">
            <label>Fault <select name="fault" id="fault">\(options)</select></label>
            <button type="submit" id="arm-fault">Arm for the next token response</button></form>
            \(form("disarm-faults", fields: [], button: "Disarm all", id: "disarm-faults"))
            </section>

            """
    }

    private static func keys(_ state: State) -> String {
        """
        <section><h2>Signing keys</h2>
        <p>Published key ids (newest last): <code id="key-ids">\(state.kids.map(e).joined(separator: ", "))</code></p>
        \(form("rotate-keys", fields: [], button: "Rotate signing key", id: "rotate-keys"))
        </section>

        """
    }

    private static func notifications(_ state: State) -> String {
        let types = notificationTypes.map { "<option value=\"\($0)\">\($0)</option>" }.joined()
        let users = state.users.map { "<option value=\"\(e($0.email))\">\(e($0.email))</option>" }.joined()
        let audiences = state.clients.map { "<option value=\"\(e($0.id))\">\(e($0.id))</option>" }.joined()
        return """
            <section><h2>Send a server-to-server notification</h2>
            <p>Signed like Apple's and POSTed as <code>{"payload": JWT}</code> to the relying party's notification endpoint.</p>
            <form method="post" action="\(actionPath)"><input type="hidden" name="action" value="notify">
            <div class="grid"><label>Event <select name="type" id="notify-type">\(types)</select></label>
            <label>User <select name="email" id="notify-user">\(users)</select></label>
            <label>Audience <select name="aud" id="notify-aud">\(audiences)</select></label></div>
            <label>URL <input type="url" name="url" id="notify-url" required value="\(e(defaultNotificationURL(state.clients)))"></label>
            <div class="actions"><button type="submit" class="primary" id="send-notification">Send notification</button></div>
            </form></section>

            """
    }

    private static func transfers(_ state: State) -> String {
        let clients = state.clients.map { "<option value=\"\(e($0.id))\">\(e($0.id))</option>" }.joined()
        var made = ""
        if !state.transfers.isEmpty {
            made = "<ul id=\"transfers\">" + state.transfers.map { transfer in
                "<li><code>\(e(transfer.clientID))</code>: team <code>\(e(transfer.fromTeam))</code> → "
                    + "<code>\(e(transfer.toTeam))</code></li>"
            }.joined() + "</ul>\n"
        }
        return """
            <section><h2>Move an app to another team</h2>
            <p>As App Store Connect's app transfer: the app's users get the new team's <code>sub</code>, its client secrets
            must name the new team, and for 60 days id_tokens carry <code>transfer_sub</code> and
            <code>/auth/usermigrationinfo</code> exchanges transfer identifiers.</p>
            \(made)<form method="post" action="\(actionPath)"><input type="hidden" name="action" value="transfer">
            <div class="grid"><label>App <select name="client_id" id="transfer-client">\(clients)</select></label>
            <label>Recipient team id <input type="text" name="team_id" id="transfer-team" required pattern="[A-Z0-9]{10}"
            autocomplete="off"></label></div>
            <div class="actions"><button type="submit" class="danger" id="transfer-app">Transfer the app</button></div>
            </form></section>

            """
    }

    /// The sidecar's notification endpoint next to the first registered callback
    /// (`…/callback` → `…/apple/notifications`).
    static func defaultNotificationURL(_ clients: [EmulatorClient]) -> String {
        guard let callback = clients.lazy.flatMap(\.redirectURIs).first(where: { $0.hasSuffix("/callback") }) else { return "" }
        return String(callback.dropLast("/callback".count)) + "/apple/notifications"
    }

    private static func form(_ action: String, fields: [(String, String)], button: String, id: String,
                             danger: Bool = false) -> String {
        let hidden = fields.map { "<input type=\"hidden\" name=\"\(e($0.0))\" value=\"\(e($0.1))\">" }.joined()
        return "<form method=\"post\" action=\"\(actionPath)\"><input type=\"hidden\" name=\"action\" value=\"\(action)\">"
            + hidden + "<button type=\"submit\" id=\"\(e(id))\"\(danger ? " class=\"danger\"" : "")>\(e(button))</button></form>"
    }

    private static func e(_ text: String) -> String { HTML.escape(text) }
}
