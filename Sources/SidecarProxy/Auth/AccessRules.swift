import SidecarConfig
import SidecarCrypto

/// `access.*` applied to a verified identity at sign-in, and a rule's `allowed_*` applied to
/// the session of each request the rule decides.
struct AccessRules: Sendable {
    enum Denial: String {
        case privateRelay = "private_relay"
        case subject
        case email
    }

    private let allowedEmails: Set<String>
    private let allowedDomains: Set<String>
    private let allowedSubjects: Set<String>
    private let allowPrivateRelay: Bool

    init(_ access: Config.Access) {
        self.init(emails: access.allowedEmails, domains: access.allowedEmailDomains, subjects: access.allowedSubjects,
                  allowPrivateRelay: access.allowPrivateRelay)
    }

    /// A rule's lists (`rules[n].allowed_*`), applied to each request it decides.
    init(_ rule: Config.Rule) {
        self.init(emails: rule.allowedEmails, domains: rule.allowedEmailDomains, subjects: rule.allowedSubjects,
                  allowPrivateRelay: rule.allowPrivateRelay ?? true)
    }

    private init(emails: [String], domains: [String], subjects: [String], allowPrivateRelay: Bool) {
        allowedEmails = Set(emails)
        allowedDomains = Set(domains)
        allowedSubjects = Set(subjects)
        self.allowPrivateRelay = allowPrivateRelay
    }

    /// nil when allowed. With both email and subject lists, matching either one admits.
    func check(subject: String, email: String?, privateEmail: Bool) -> Denial? {
        if privateEmail && !allowPrivateRelay { return .privateRelay }
        let restrictsEmail = !allowedEmails.isEmpty || !allowedDomains.isEmpty
        let restrictsSubject = !allowedSubjects.isEmpty
        guard restrictsEmail || restrictsSubject else { return nil }
        if restrictsSubject && allowedSubjects.contains(subject) { return nil }
        if restrictsEmail, let email, emailAllowed(email) { return nil }
        return restrictsEmail ? .email : .subject
    }

    /// Exact address, or exact domain after the one and only `@` (`a@evil.com@corp.com` has two).
    private func emailAllowed(_ email: String) -> Bool {
        let lower = email.lowercased()
        if allowedEmails.contains(lower) { return true }
        let parts = lower.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return false }
        return allowedDomains.contains(String(parts[1]))
    }
}
