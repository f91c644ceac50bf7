import XCTest
import SidecarConfig

/// The identity headers beyond the identity (transfer_sub, previous_user_id, real_user_status,
/// auth_time, session_issued_at): renamed, or `none`; never a managed header nor another's
/// name; and the default names of renamed or dropped ones still stripped.
final class IdentityHeaderConfigTests: XCTestCase {
    func testDefaultsSendTheOnesASessionMayCarryAndLeaveTheTimesOff() throws {
        let headers = try parse(Fixture.minimal).headers
        XCTAssertEqual(headers.transferSub, "X-Auth-Transfer-Sub")
        XCTAssertEqual(headers.previousUserID, "X-Auth-Previous-User-Id")
        XCTAssertEqual(headers.realUserStatus, "X-Auth-Real-User-Status")
        XCTAssertEqual(headers.authTime, "none")
        XCTAssertEqual(headers.sessionIssuedAt, "none")
        XCTAssertTrue(headers.strippedIdentityHeaders.contains("X-Auth-Auth-Time"), "a header off is still stripped")
    }

    func testRenamedAndDroppedHeadersKeepTheirDefaultNamesStripped() throws {
        let headers = try parse(Fixture.minimal + "headers:\n  email: none\n  real_user_status: X-Real\n  auth_time: X-When\n").headers
        XCTAssertEqual(headers.email, "none")
        let stripped = Set(headers.strippedIdentityHeaders.map { $0.lowercased() })
        for name in ["x-auth-email", "x-real", "x-auth-real-user-status", "x-when", "x-auth-auth-time", "x-auth-user-id"] {
            XCTAssertTrue(stripped.contains(name), name)
        }
        XCTAssertFalse(stripped.contains("none"))
    }

    func testNamesAreCheckedLikeTheOthers() throws {
        let taken = try errors(Fixture.minimal + "headers:\n  transfer_sub: X-Auth-User-Id\n").first
        XCTAssertEqual(taken?.kind, .conflict)
        XCTAssertEqual(taken?.path, "headers.transfer_sub")
        XCTAssertEqual(try errors(Fixture.minimal + "headers:\n  auth_time: Host\n").first?.path, "headers.auth_time")
        XCTAssertEqual(try errors(Fixture.minimal + "headers:\n  auth_time: X_Auth_User_Id\n").first?.kind, .conflict)
        XCTAssertEqual(try errors(Fixture.minimal + "headers:\n  previous_user_id: \"X Bad\"\n").first?.path,
                       "headers.previous_user_id")
        let assertion = try errors(Fixture.minimal + "headers:\n  assertion: none\n").first
        XCTAssertEqual(assertion?.path, "headers.assertion")
        XCTAssertTrue(assertion?.message.contains("assertion.enabled") == true)
        // Two headers off is no conflict.
        XCTAssertEqual(try parse(Fixture.minimal + "headers:\n  auth_time: none\n  name: none\n").headers.name, "none")
    }

    func testTheMappingFileMustBeReadable() throws {
        let error = try errors(Fixture.minimal.replacingOccurrences(
            of: "  private_key_file: AuthKey.p8\n", with: "  private_key_file: AuthKey.p8\n  transfer:\n    mapping_file: nope.csv\n")).first
        XCTAssertEqual(error?.path, "apple.transfer.mapping_file")
        XCTAssertEqual(error?.line, 10)
        XCTAssertEqual(try errors(Fixture.minimal.replacingOccurrences(
            of: "  private_key_file: AuthKey.p8\n", with: "  private_key_file: AuthKey.p8\n  transfer:\n    mapping: x\n")).first?.kind,
            .unknownKey)
    }
}
