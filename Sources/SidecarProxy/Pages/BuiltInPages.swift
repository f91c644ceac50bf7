import SidecarHTTP

/// The sidecar's own pages, written in the same template language operators use
/// (`pages.templates`), so one renderer serves both and a built-in page is a working example.
enum BuiltInPages {
    static func template(_ kind: PageKind) -> PageTemplate {
        // The texts are constants checked by the unit tests: a parse failure is a programming error.
        try! PageTemplate(source(kind))
    }

    static func source(_ kind: PageKind) -> String {
        PageDesign.head(title: "{{title}}") + "<main>\n" + body(kind) + "</main>\n</body></html>\n"
    }

    private static let details = """
        <p class="meta"><span>Status {{status}}</span> <span>Reason <code>{{reason}}</code></span> \
        <span>Request ID <code>{{request_id}}</code></span></p>

        """

    /// HIG: black (white in dark mode), the Apple logo, "Sign in with Apple", ≥ 140×30 pt.
    static let appleButton = """
        <a class="apple" href="{{login_url}}" id="sign-in-with-apple">\(PageDesign.appleLogo)\
        <span>Sign in with Apple</span></a>
        """

    private static func body(_ kind: PageKind) -> String {
        switch kind {
        case .signIn:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions">\(appleButton)</div>

                """
        case .signedOut:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions"><a class="button" href="{{login_url}}" id="sign-in-again">Sign in again</a></div>

                """
        case .unauthorized:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions">\(appleButton)</div>
                \(details)
                """
        case .forbidden:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions"><a class="button" href="{{login_url}}" id="sign-in-again">Use another Apple ID</a></div>
                \(details)
                """
        case .errorWithSignIn:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions"><a class="button primary" href="{{login_url}}" id="sign-in-again">Start a new sign-in</a></div>
                \(details)
                """
        case .error:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                \(details)
                """
        case .confirmSignOut:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <form method="post" action="{{login_url}}" class="actions">\
                <button type="submit" class="primary" id="sign-out">Sign out</button></form>
                \(details)
                """
        }
    }
}
