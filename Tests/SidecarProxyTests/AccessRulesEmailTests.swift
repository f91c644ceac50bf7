import XCTest

@testable import SidecarConfig
@testable import SidecarProxy

/// `allowed_emails` and `allowed_email_domains` against addresses with several `@`: the
/// domain is the part after the one and only `@`, never the first's nor the last's.
final class AccessRulesEmailTests: XCTestCase {
    private let rules: AccessRules = {
        var access = Config.Access()
        access.allowedEmails = ["a@example.com"]
        access.allowedEmailDomains = ["example.com"]
        return AccessRules(access)
    }()

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
