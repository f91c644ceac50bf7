import SidecarConfig
import XCTest

@testable import SidecarProxy

/// `ForwardAuthTarget`: Envoy's `{prefix}/check/<original path>` is recognized on the raw path
/// alone, and its answer names every identity header it does not set.
final class ForwardAuthTargetTests: XCTestCase {
    private let target = ForwardAuthTarget(prefix: Array("/.auth".utf8), headers: Config.Headers())

    private func original(_ path: String) -> String? {
        Array(path.utf8).withUnsafeBytes { target.original(of: $0).map { String(decoding: $0, as: UTF8.self) } }
    }

    func testOnlyTheLiteralPrefixIsTheForm() {
        XCTAssertEqual(original("/.auth/check/app/x"), "/app/x")
        XCTAssertEqual(original("/.auth/check//x"), "//x")
        XCTAssertEqual(original("/.auth/check/../me"), "/../me", "the original path is taken whole, normalized later")
        XCTAssertNil(original("/.auth/check"), "the header form")
        XCTAssertNil(original("/.auth/checkx/y"))
        XCTAssertNil(original("/.auth/./check/x"))
        XCTAssertNil(original("//.auth/check/x"))
        XCTAssertNil(original("/.auth/%63heck/x"))
        XCTAssertNil(original("/.AUTH/check/x"))
        XCTAssertNil(original("/app/.auth/check/x"))
        let none = ForwardAuthTarget(prefix: [], headers: Config.Headers())
        XCTAssertNil(Array("/check/x".utf8).withUnsafeBytes { none.original(of: $0) }, "no prefix: no endpoints")
    }

    func testWithoutASessionEveryIdentityHeaderIsRemoved() {
        let removed = String(decoding: target.removals(for: RequestIdentity()), as: UTF8.self).components(separatedBy: ", ")
        XCTAssertEqual(Array(removed.prefix(6)), [
            "x-auth-user-id", "x-auth-email", "x-auth-email-verified", "x-auth-private-email", "x-auth-name",
            "x-auth-assertion",
        ])
        XCTAssertTrue(removed.contains("x-original-url") && removed.contains("forwarded"), "\(removed)")
        XCTAssertFalse(removed.contains("authorization"))
        var bearer = RequestIdentity()
        bearer.stripBearer = true
        XCTAssertEqual(String(decoding: target.removals(for: bearer), as: UTF8.self).components(separatedBy: ", ").last,
                       "authorization")
    }
}
