import SidecarHTTP

/// What each page says: one sentence on what happened and what to do, named here and said
/// in each language by `Languages/`, so every endpoint says the same thing the same way. Each
/// page is in the language `PageRenderer.language(for:)` chooses for the request.
extension PageRenderer {
    /// `pages.sign_in`: a browser navigation without a session.
    func signIn(loginURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        render(.signIn, PageContent(
            status: 401, title: .signInTitle, message: .signInMessage, reason: "unauthenticated", loginURL: loginURL),
            for: head)
    }

    /// A browser request other than GET/HEAD without a session (it cannot be redirected).
    func unauthorized(loginURL: [UInt8], message: PageText = .unauthorizedMessage, for head: HTTPRequestHead)
        -> LocalResponse {
        render(.unauthorized, PageContent(
            status: 401, title: .unauthorizedTitle, message: message, reason: "unauthenticated", loginURL: loginURL),
            for: head)
    }

    /// After a logout without `rd`: a page, never a redirect back into the login.
    func signedOut(loginURL: [UInt8], userName: String, for head: HTTPRequestHead) -> LocalResponse {
        render(.signedOut, PageContent(
            status: 200, title: .signedOutTitle, message: .signedOutMessage, reason: "signed_out", loginURL: loginURL,
            userName: userName), for: head)
    }

    /// After account deletion without `rd`.
    func accountDeleted(loginURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        render(.signedOut, PageContent(
            status: 200, title: .accountDeletedTitle, message: .accountDeletedMessage, reason: "account_deleted",
            loginURL: loginURL), for: head)
    }

    func loginFailure(_ failure: LoginFailure, loginURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        let kind: PageKind = failure.status == 403 ? .forbidden : .errorWithSignIn
        let (title, message) = failure.pageTexts
        return render(kind, PageContent(
            status: failure.status, title: title, message: message, reason: failure.reason, loginURL: loginURL),
            for: head)
    }

    /// 503: the store could not record what the request needed.
    func storeUnavailable(loginURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        render(.errorWithSignIn, PageContent(
            status: 503, title: .storeUnavailableTitle, message: .storeUnavailableMessage, reason: "store_unavailable",
            loginURL: loginURL), for: head)
    }

    /// 403: signed in, but the rule for this path does not admit this account.
    func ruleRefused(loginURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        render(.forbidden, PageContent(
            status: 403, title: .ruleRefusedTitle, message: .ruleRefusedMessage, reason: "not_allowed", loginURL: loginURL),
            for: head)
    }

    /// A cross-site GET of the logout: the user confirms with a same-site POST.
    func confirmSignOut(logoutURL: [UInt8], for head: HTTPRequestHead) -> LocalResponse {
        render(.confirmSignOut, PageContent(
            status: 403, title: .confirmSignOutTitle, message: .confirmSignOutMessage, reason: "logout_cross_site",
            loginURL: logoutURL), for: head)
    }

    /// Other errors of the sidecar's own endpoints and of proxying (405, 404, 502, 504, …).
    func error(
        _ status: Int, reason: String, title: PageText, message: PageText, loginURL: [UInt8]? = nil,
        for head: HTTPRequestHead
    ) -> LocalResponse {
        render(loginURL == nil ? .error : .errorWithSignIn, PageContent(
            status: status, title: title, message: message, reason: reason, loginURL: loginURL ?? []), for: head)
    }

    /// The page a browser gets for a status the proxy answers itself.
    func proxyError(_ status: Int, for head: HTTPRequestHead) -> LocalResponse {
        switch status {
        case 404: error(404, reason: "not_found", title: .notFoundTitle, message: .notFoundMessage, for: head)
        case 405:
            error(405, reason: "method_not_allowed", title: .methodNotAllowedTitle, message: .methodNotAllowedMessage,
                  for: head)
        case 502:
            error(502, reason: "upstream_unavailable", title: .upstreamUnavailableTitle,
                  message: .upstreamUnavailableMessage, for: head)
        case 504:
            error(504, reason: "upstream_timeout", title: .upstreamTimeoutTitle, message: .upstreamTimeoutMessage,
                  for: head)
        default:
            error(status, reason: "error_\(status)", title: .otherErrorTitle, message: .otherErrorMessage, for: head)
        }
    }
}

extension LoginFailure {
    /// The page's title (what happened) and message (what it means and what to do). A
    /// cancel says only that.
    var pageTexts: (title: PageText, message: PageText) {
        switch (status, reason) {
        case (403, _): (.policyDeniedTitle, .policyDeniedMessage)
        case (504, _): (.appleTimeoutTitle, .appleFailedMessage)
        case (502, _): (.appleUnavailableTitle, .appleFailedMessage)
        case (500, _): (.internalErrorTitle, .internalErrorMessage)
        case (503, _): (.storeUnavailableTitle, .signInNotRecordedMessage)
        case (_, "apple_cancelled"): (.cancelledTitle, .cancelledMessage)
        case (401, _): (.notVerifiedTitle, .notVerifiedMessage)
        case (_, "state_missing"): (.stateMissingTitle, .stateMissingMessage)
        case (_, let r) where r.hasPrefix("state_"): (.stateExpiredTitle, .stateExpiredMessage)
        default: (.incompleteTitle, .incompleteMessage)
        }
    }
}
