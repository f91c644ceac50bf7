import XCTest

@testable import SidecarProxy

/// The relay's two decisions: which listed package, and the intent URL.
final class AndroidRelayTests: XCTestCase {
    private func package(_ query: String?, _ listed: [String]) -> String? {
        try? AndroidRelay.package(query: query.flatMap { FormFields(Array($0.utf8)) }, listed: listed)
    }

    func testThePackageIsTheOnlyListedOneOrTheNamedListedOne() {
        XCTAssertEqual(package(nil, ["com.example.app"]), "com.example.app")
        XCTAssertEqual(package("x=1", ["com.example.app"]), "com.example.app")
        XCTAssertEqual(package("package=com.example.b", ["com.example.a", "com.example.b"]), "com.example.b")
        XCTAssertNil(package(nil, ["com.example.a", "com.example.b"]), "several listed: the URL must name one")
        XCTAssertNil(package("package=com.evil.app", ["com.example.app"]), "never another app")
        XCTAssertNil(package("package=com.example.app&package=com.evil.app", ["com.example.app", "com.evil.app"]))
    }

    func testFieldsAreReEncodedAndOnlyTheKnownOnesPass() throws {
        let form = try XCTUnwrap(FormFields(Array(
            "user=%7B%22name%22%3A%7B%22firstName%22%3A%22Jos%C3%A9%22%7D%7D&code=c+1%26x%23y&state=s%3Bend&extra=1&id_token=a.b.c".utf8)))
        let url = try AndroidRelay.intentURL(form: form, package: "com.example.app")
        XCTAssertEqual(url, "intent://callback?code=c%201%26x%23y&id_token=a.b.c&state=s%3Bend"
            + "&user=%7B%22name%22%3A%7B%22firstName%22%3A%22Jos%C3%A9%22%7D%7D"
            + "#Intent;package=com.example.app;scheme=signinwithapple;end")
        let cancelled = try XCTUnwrap(FormFields(Array("error=user_cancelled_authorize&state=s".utf8)))
        XCTAssertEqual(try AndroidRelay.intentURL(form: cancelled, package: "a.b"),
                       "intent://callback?state=s&error=user_cancelled_authorize#Intent;package=a.b;scheme=signinwithapple;end")
        let twice = try XCTUnwrap(FormFields(Array("code=a&code=b".utf8)))
        XCTAssertThrowsError(try AndroidRelay.intentURL(form: twice, package: "a.b"))
    }
}
