import SidecarHTTP

/// Every sentence and label the built-in pages show, named once; each language file
/// (`Languages/`) says all of them, which its exhaustive `switch` makes the compiler check.
/// Titles and messages fill `{{title}}` and `{{message}}` of operators' templates too.
enum PageText: Int, CaseIterable, Sendable {
    // The pages' own labels and buttons.
    case statusLabel, reasonLabel, requestIDLabel
    /// Apple's localized button title, never a translation of ours (see `Docs/pages.md`).
    case signInWithApple
    case signInAgain, useAnotherAppleID, startNewSignIn, signOut

    // Signing in, signing out, being refused.
    case signInTitle, signInMessage
    case unauthorizedTitle, unauthorizedMessage
    case signedOutTitle, signedOutMessage
    case accountDeletedTitle, accountDeletedMessage
    case storeUnavailableTitle, storeUnavailableMessage
    case ruleRefusedTitle, ruleRefusedMessage
    case confirmSignOutTitle, confirmSignOutMessage

    // The proxy's own errors.
    case notFoundTitle, notFoundMessage
    case methodNotAllowedTitle, methodNotAllowedMessage
    case upstreamUnavailableTitle, upstreamUnavailableMessage
    case upstreamTimeoutTitle, upstreamTimeoutMessage
    case otherErrorTitle, otherErrorMessage

    // Account deletion (`/revoke`).
    case accountNotDeletedTitle, revocationFailedMessage, deletionCrossSiteMessage, deletionNeedsSignInMessage

    // A sign-in that did not complete (`LoginFailure`).
    case policyDeniedTitle, policyDeniedMessage
    case appleTimeoutTitle, appleUnavailableTitle, appleFailedMessage
    case internalErrorTitle, internalErrorMessage
    case signInNotRecordedMessage
    case cancelledTitle, cancelledMessage
    case notVerifiedTitle, notVerifiedMessage
    case stateMissingTitle, stateMissingMessage
    case stateExpiredTitle, stateExpiredMessage
    case incompleteTitle, incompleteMessage

    func text(in language: PageLanguage) -> String {
        switch language {
        case .english: english
        case .german: german
        case .french: french
        case .spanish: spanish
        case .italian: italian
        case .brazilianPortuguese: brazilianPortuguese
        case .japanese: japanese
        case .korean: korean
        case .simplifiedChinese: simplifiedChinese
        case .traditionalChinese: traditionalChinese
        case .arabic: arabic
        case .hebrew: hebrew
        }
    }
}
