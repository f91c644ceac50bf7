extension PageText {
    var english: String {
        switch self {
        case .statusLabel: "Status"
        case .reasonLabel: "Reason"
        case .requestIDLabel: "Request ID"
        case .signInWithApple: "Sign in with Apple"
        case .signInAgain: "Sign in again"
        case .useAnotherAppleID: "Use another Apple ID"
        case .startNewSignIn: "Start a new sign-in"
        case .signOut: "Sign out"

        case .signInTitle: "Sign in"
        case .signInMessage: "Sign in with your Apple ID to continue to this site."
        case .unauthorizedTitle: "Sign in required"
        case .unauthorizedMessage: "This page is only for signed-in people. Sign in with your Apple ID, then try again."
        case .signedOutTitle: "You are signed out"
        case .signedOutMessage:
            "You are signed out of this site on this browser. Close this window, or sign in again to continue."
        case .accountDeletedTitle: "Account deleted"
        case .accountDeletedMessage:
            "Your account was deleted and you are signed out on every device; this site no longer has access to your Apple ID."
        case .storeUnavailableTitle: "Please try again"
        case .storeUnavailableMessage:
            "The sign-in service could not record this step, so nothing was changed. Try again in a moment."
        case .ruleRefusedTitle: "Not open to your account"
        case .ruleRefusedMessage:
            "You are signed in, but this page is not open to your Apple ID. Ask the site's owner for access, or sign in with another Apple ID."
        case .confirmSignOutTitle: "Sign out?"
        case .confirmSignOutMessage:
            "The sign-out link came from another site, so it was not followed. Use the button to sign out."

        case .notFoundTitle: "Page not found"
        case .notFoundMessage: "There is no page at this address. Check the link, or go back to the site's start page."
        case .methodNotAllowedTitle: "Not allowed here"
        case .methodNotAllowedMessage:
            "This address does not accept that kind of request. Go back and use the site's own links and buttons."
        case .upstreamUnavailableTitle: "The site is not answering"
        case .upstreamUnavailableMessage: "The application behind this page could not be reached. Try again in a moment."
        case .upstreamTimeoutTitle: "The site is taking too long"
        case .upstreamTimeoutMessage: "The application behind this page did not answer in time. Try again in a moment."
        case .otherErrorTitle: "Something went wrong"
        case .otherErrorMessage: "This request could not be completed. Try again in a moment."

        case .accountNotDeletedTitle: "Account not deleted"
        case .revocationFailedMessage: "Apple did not confirm the revocation, so nothing was changed. Try again in a moment."
        case .deletionCrossSiteMessage:
            "The request came from another site, so nothing was changed. Delete your account from this site's own page."
        case .deletionNeedsSignInMessage:
            "You are not signed in, so there is no account to delete. Sign in first, then delete your account."

        case .policyDeniedTitle: "You are not allowed to sign in here"
        case .policyDeniedMessage:
            "Your Apple ID is not on this site's list of allowed accounts. Sign in with another Apple ID, or ask the site's owner for access."
        case .appleTimeoutTitle: "Apple did not answer in time"
        case .appleUnavailableTitle: "Sign in with Apple is not available right now"
        case .appleFailedMessage: "Apple did not answer as expected, so you are not signed in. Try again in a moment."
        case .internalErrorTitle: "Sign-in failed on our side"
        case .internalErrorMessage:
            "Something went wrong on this site, so you are not signed in. Start a new sign-in; if it happens again, contact support with the details below."
        case .signInNotRecordedMessage:
            "The sign-in service could not record this step, so you are not signed in. Start a new sign-in in a moment."
        case .cancelledTitle: "Sign-in cancelled"
        case .cancelledMessage: "You cancelled signing in with Apple."
        case .notVerifiedTitle: "Sign-in could not be verified"
        case .notVerifiedMessage:
            "Apple's confirmation of who you are did not check out, so you are not signed in. Start a new sign-in."
        case .stateMissingTitle: "This sign-in could not be matched to your browser"
        case .stateMissingMessage:
            "Your browser did not send back this sign-in's cookie. Allow cookies for this site, then start a new sign-in."
        case .stateExpiredTitle: "This sign-in has expired"
        case .stateExpiredMessage:
            "A sign-in works once and for 10 minutes; this one expired or was already used. Start a new sign-in."
        case .incompleteTitle: "Sign-in did not complete"
        case .incompleteMessage: "Apple's answer was incomplete, so you are not signed in. Start a new sign-in."
        }
    }
}
