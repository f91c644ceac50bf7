import XCTest

@testable import SidecarConfig
@testable import SidecarProxy

/// `allowed_emails` and `allowed_email_domains` against addresses with several `@`: the
/// domain is the part after the one and only `@`, never the first's nor the last's.
final class AccessRulesEmailTests: XCTestCase {
    private let rules = AccessRules(Config.Access(
        allowedEmails: ["a@example.com"], allowedEmailDomains: ["example.com"], allowedSubjects: [],
        allowPrivateRelay: true, publicPaths: [], apiPaths: [], allowedRedirectHosts: []))

    func testOneAtSignAndTheDomainAdmit() {
        for email in ["a@example.com", "b@example.com", "B@EXAMPLE.COM"] {
            XCTAssertNil(rules.check(subject: "s", email: email, privateEmail: false), email)
        }
    }

    func testSeveralAtSignsMatchNoRule() {
        for email in [
            "a@evil.com@example.com", "a@example.com@evil.com", "a@example.com@example.com", "\"a@evil.com\"@example.com",
            "@example.com", "a@", "example.com", "a@@example.com", "a@example.com.", "a@sub.example.com", "",
        ] {
            XCTAssertEqual(rules.check(subject: "s", email: email, privateEmail: false), .email, email)
        }
        XCTAssertEqual(rules.check(subject: "s", email: nil, privateEmail: false), .email)
    }
}
