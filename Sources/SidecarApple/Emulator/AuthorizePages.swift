import SidecarEvent
import SidecarHTTP

/// The HTML the emulator shows: the sign-in/consent page and the auto-submitting
/// `form_post`. Every interpolated value is escaped.
enum AuthorizePages {
    static let consentPath = "/auth/authorize/consent"

    static func consent(_ request: AuthorizationRequest, users: [TestUser], message: String? = nil) -> ServiceResponse {
        var options = ""
        for (index, user) in users.enumerated() {
            let name = [user.firstName, user.lastName].compactMap { $0 }.joined(separator: " ")
            let label = name.isEmpty ? user.email : "\(name) <\(user.email)>"
            options += "<option value=\"\(index)\"\(index == 0 ? " selected" : "")>\(HTML.escape(label))"
                + (user.hideMyEmail ? " (Hide My Email)" : "") + "</option>"
        }
        let scopes = request.scopes.isEmpty ? "no personal data" : request.scopes.joined(separator: " and ")
        let body = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Sign in with Apple (emulator)</title>
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
        label{display:block;margin:.6rem 0}input[type=text],input[type=email],select{width:100%;padding:.4rem}
        button{padding:.5rem 1.2rem;margin:.8rem .5rem 0 0}.note{color:#555;font-size:.9rem}.error{color:#b00}</style>
        </head><body>
        <h1>Sign in with Apple</h1>
        <p class="note">Local emulator — not Apple. <b>\(HTML.escape(request.clientID))</b> asks for \(HTML.escape(scopes)).</p>
        \(message.map { "<p class=\"error\">\(HTML.escape($0))</p>" } ?? "")
        <form method="post" action="\(consentPath)">
        <input type="hidden" name="request" value="\(HTML.escape(request.rawQuery))">
        <label>Test user <select name="known" id="known">\(options)<option value="">(use the email below)</option></select></label>
        <label>Or another email <input type="email" name="email" id="email" autocomplete="off"></label>
        <label>First name <input type="text" name="first_name" id="first_name"></label>
        <label>Last name <input type="text" name="last_name" id="last_name"></label>
        <label><input type="checkbox" name="hide_email" id="hide_email" value="1"> Hide My Email</label>
        <button type="submit" name="action" value="approve" id="approve">Continue</button>
        <button type="submit" name="action" value="cancel" id="cancel">Cancel</button>
        </form></body></html>
        """
        return page(body)
    }

    /// An auto-submitting POST of `fields` to `action` (with a button when scripts are off).
    static func formPost(action: String, fields: [(String, String)]) -> ServiceResponse {
        let inputs = fields.map { "<input type=\"hidden\" name=\"\(HTML.escape($0.0))\" value=\"\(HTML.escape($0.1))\">" }
            .joined(separator: "\n")
        let body = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Signing in…</title></head>
        <body>
        <form method="post" action="\(HTML.escape(action))">
        \(inputs)
        <noscript><button type="submit">Continue</button></noscript>
        </form>
        <script>document.forms[0].submit()</script>
        </body></html>
        """
        return page(body)
    }

    private static func page(_ body: String) -> ServiceResponse {
        var response = ServiceResponse.html(200, body)
        response.headers.append(("X-Frame-Options", "DENY"))
        response.headers.append(("Referrer-Policy", "no-referrer"))
        return response
    }
}
