/// What each page says: one sentence on what happened and what to do. The
/// wording lives here, beside the renderer, so every endpoint says the same thing the same way.
extension PageRenderer {
    /// `pages.sign_in`: a browser navigation without a session.
    func signIn(loginURL: [UInt8]) -> LocalResponse {
        render(.signIn, PageContent(
            status: 401, title: "Sign in", message: "Sign in with your Apple ID to continue to this site.",
            reason: "unauthenticated", loginURL: loginURL))
    }

    /// A browser request other than GET/HEAD without a session (it cannot be redirected).
    func unauthorized(loginURL: [UInt8], message: String = "This page is only for signed-in people. Sign in with your Apple ID, then try again.")
        -> LocalResponse {
        render(.unauthorized, PageContent(
            status: 401, title: "Sign in required", message: message, reason: "unauthenticated", loginURL: loginURL))
    }

    /// After a logout without `rd`: a page, never a redirect back into the login.
    func signedOut(loginURL: [UInt8], userName: String) -> LocalResponse {
        render(.signedOut, PageContent(
            status: 200, title: "You are signed out",
            message: "You are signed out of this site on this browser. Close this window, or sign in again to continue.",
            reason: "signed_out", loginURL: loginURL, userName: userName))
    }

    /// After account deletion without `rd`.
    func accountDeleted(loginURL: [UInt8]) -> LocalResponse {
        render(.signedOut, PageContent(
            status: 200, title: "Account deleted",
            message: "Your account was deleted and you are signed out on every device; this site no longer has access to your Apple ID.",
            reason: "account_deleted", loginURL: loginURL))
    }

    func loginFailure(_ failure: LoginFailure, loginURL: [UInt8]) -> LocalResponse {
        let kind: PageKind = failure.status == 403 ? .forbidden : .errorWithSignIn
        return render(kind, PageContent(
            status: failure.status, title: failure.headline, message: failure.advice, reason: failure.reason,
            loginURL: loginURL))
    }

    /// 503: the store could not record what the request needed.
    func storeUnavailable(loginURL: [UInt8]) -> LocalResponse {
        render(.errorWithSignIn, PageContent(
            status: 503, title: "Please try again",
            message: "The sign-in service could not record this step, so nothing was changed. Try again in a moment.",
            reason: "store_unavailable", loginURL: loginURL))
    }

    /// 403: signed in, but the rule for this path does not admit this account.
    func ruleRefused(loginURL: [UInt8]) -> LocalResponse {
        render(.forbidden, PageContent(
            status: 403, title: "Not open to your account",
            message: "You are signed in, but this page is not open to your Apple ID. Ask the site's owner for access, or sign in with another Apple ID.",
            reason: "not_allowed", loginURL: loginURL))
    }

    /// A cross-site GET of the logout: the user confirms with a same-site POST.
    func confirmSignOut(logoutURL: [UInt8]) -> LocalResponse {
        render(.confirmSignOut, PageContent(
            status: 403, title: "Sign out?",
            message: "The sign-out link came from another site, so it was not followed. Use the button to sign out.",
            reason: "logout_cross_site", loginURL: logoutURL))
    }

    /// Other errors of the sidecar's own endpoints and of proxying (405, 404, 502, 504, …).
    func error(_ status: Int, reason: String, title: String, message: String, loginURL: [UInt8]? = nil) -> LocalResponse {
        render(loginURL == nil ? .error : .errorWithSignIn, PageContent(
            status: status, title: title, message: message, reason: reason, loginURL: loginURL ?? []))
    }

    /// The page a browser gets for a status the proxy answers itself.
    func proxyError(_ status: Int) -> LocalResponse {
        switch status {
        case 404:
            error(404, reason: "not_found", title: "Page not found",
                  message: "There is no page at this address. Check the link, or go back to the site's start page.")
        case 405:
            error(405, reason: "method_not_allowed", title: "Not allowed here",
                  message: "This address does not accept that kind of request. Go back and use the site's own links and buttons.")
        case 502:
            error(502, reason: "upstream_unavailable", title: "The site is not answering",
                  message: "The application behind this page could not be reached. Try again in a moment.")
        case 504:
            error(504, reason: "upstream_timeout", title: "The site is taking too long",
                  message: "The application behind this page did not answer in time. Try again in a moment.")
        default:
            error(status, reason: "error_\(status)", title: "Something went wrong",
                  message: "This request could not be completed. Try again in a moment.")
        }
    }
}
