import SidecarHTTP

/// The sidecar's own pages, written in the same template language operators use
/// (`pages.templates`), so one renderer serves both and a built-in page is a working example.
enum BuiltInPages {
    static func template(_ kind: PageKind, in language: PageLanguage) -> PageTemplate {
        // The texts are constants checked by the unit tests: a parse failure is a programming error.
        try! PageTemplate(source(kind, in: language))
    }

    /// The page with its labels and buttons in `language`; the language's tag, direction and
    /// Apple's button title stay placeholders, as an operator's template would use them.
    static func source(_ kind: PageKind, in language: PageLanguage) -> String {
        PageDesign.head(title: "{{title}}", language: "{{language}}", direction: "{{direction}}") + "<main>\n"
            + body(kind) { HTML.escape($0.text(in: language)) } + "</main>\n</body></html>\n"
    }

    /// The reason and request id are `code`, which the style sheet isolates left to right,
    /// so `token_aud_mismatch` reads the same in a right-to-left page.
    private static func details(_ say: (PageText) -> String) -> String {
        """
        <p class="meta"><span>\(say(.statusLabel)) {{status}}</span> \
        <span>\(say(.reasonLabel)) <code>{{reason}}</code></span> \
        <span>\(say(.requestIDLabel)) <code>{{request_id}}</code></span></p>

        """
    }

    /// HIG: black (white in dark mode), the Apple logo on the title's leading side, Apple's
    /// title in the page's language, ≥ 140×30 pt.
    static let appleButton = """
        <a class="apple" href="{{login_url}}" id="sign-in-with-apple">\(PageDesign.appleLogo)\
        <span>{{sign_in_with_apple}}</span></a>
        """

    private static func body(_ kind: PageKind, _ say: (PageText) -> String) -> String {
        let details = details(say)
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
                <div class="actions"><a class="button" href="{{login_url}}" id="sign-in-again">\(say(.signInAgain))</a></div>

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
                <div class="actions"><a class="button" href="{{login_url}}" id="sign-in-again">\(say(.useAnotherAppleID))</a></div>
                \(details)
                """
        case .errorWithSignIn:
            return """
                <h1>{{title}}</h1>
                <p>{{message}}</p>
                <div class="actions"><a class="button primary" href="{{login_url}}" id="sign-in-again">\(say(.startNewSignIn))</a></div>
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
                <button type="submit" class="primary" id="sign-out">\(say(.signOut))</button></form>
                \(details)
                """
        }
    }
}
