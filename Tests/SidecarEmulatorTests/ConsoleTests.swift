import XCTest
import SidecarApple
import SidecarCrypto

/// The console: a page for browsers, the endpoint list for scripts, every form one
/// call of the JSON control API, accepted only from the console's own origin, and every value
/// it shows escaped.
final class ConsoleTests: XCTestCase {
    private func console(_ emulator: EmulatorFixture) throws -> HTTPReply {
        try RawHTTP.request(emulator.address, "GET", "/emulator", headers: [("Accept", "text/html")])
    }

    private func act(_ emulator: EmulatorFixture, _ pairs: [(String, String)], origin: String? = nil) throws -> HTTPReply {
        try RawHTTP.request(emulator.address, "POST", "/emulator/console", headers: [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Origin", origin ?? emulator.issuer),
        ], body: formBody(pairs))
    }

    func testBrowsersGetThePageAndScriptsTheList() throws {
        let emulator = try EmulatorFixture()
        let page = try console(emulator)
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(page.header("Content-Security-Policy")?.hasPrefix("default-src 'none'; style-src 'sha256-") ?? false)
        XCTAssertTrue(page.text.contains("maria.ruiz@example.com"))
        XCTAssertTrue(page.text.contains("value=\"https://app.example.com/.auth/apple/notifications\""),
                      "the notification URL defaults to the sidecar's, next to the registered callback")
        let list = try emulator.get("/emulator")
        XCTAssertEqual(list.header("Content-Type"), "text/plain; charset=utf-8")
        XCTAssertTrue(list.text.contains("POST /emulator/faults"))
    }

    func testFormsDriveTheControlAPIAndComeBackToTheConsole() throws {
        let emulator = try EmulatorFixture()
        let armed = try act(emulator, [("action", "arm-fault"), ("fault", "invalid_grant")])
        XCTAssertEqual(armed.status, 303)
        XCTAssertEqual(armed.header("Location"), "/emulator")
        XCTAssertEqual(try emulator.get("/emulator/faults").json, .object(["armed": .array([.string("invalid_grant")])]))

        XCTAssertEqual(try act(emulator, [("action", "add-user"), ("email", "x@example.com"),
                                          ("first_name", "<b>Eve</b>"), ("last_name", "")]).status, 303)
        let users = try emulator.get("/emulator/users").json
        XCTAssertTrue(users?.jsonText.contains("x@example.com") ?? false)
        let page = try console(emulator).text
        XCTAssertTrue(page.contains("&lt;b&gt;Eve&lt;/b&gt;"))
        XCTAssertFalse(page.contains("<b>Eve</b>"))
        XCTAssertTrue(page.contains("Added x@example.com."))

        XCTAssertEqual(try act(emulator, [("action", "arm-fault"), ("fault", "no_such_fault")]).status, 303)
        XCTAssertTrue(try console(emulator).text.contains("arm-fault failed: unknown fault"), "errors are shown")
    }

    func testTheTransferButtonMovesTheAppAndSaysSo() throws {
        let emulator = try EmulatorFixture()
        XCTAssertTrue(try console(emulator).text.contains("id=\"transfer-app\""))
        let moved = try act(emulator, [("action", "transfer"), ("client_id", EmulatorFixture.webClient), ("team_id", "NEWTEAM123")])
        XCTAssertEqual(moved.status, 303)
        XCTAssertEqual(try emulator.get("/emulator/transfers").json?.jsonText.contains("\"to_team\":\"NEWTEAM123\""), true)
        let page = try console(emulator).text
        XCTAssertTrue(page.contains("com.example.web moved from team TEAM123456 to NEWTEAM123"), page)
        XCTAssertEqual(try act(emulator, [("action", "transfer"), ("client_id", EmulatorFixture.webClient),
                                          ("team_id", "<x>")]).status, 303)
        XCTAssertTrue(try console(emulator).text.contains("transfer failed: team_id must be"), "errors are shown")
        XCTAssertEqual(try act(emulator, [("action", "transfer"), ("client_id", EmulatorFixture.otherClient),
                                          ("team_id", "NEWTEAM123")], origin: "https://evil.example").status, 403)
        XCTAssertEqual(try emulator.get("/emulator/transfers").json?.jsonText.contains(EmulatorFixture.otherClient), false)
    }

    func testFormsFromAnotherOriginChangeNothing() throws {
        let emulator = try EmulatorFixture()
        XCTAssertEqual(try act(emulator, [("action", "rotate-keys")], origin: "https://evil.example").status, 403)
        let crossSite = try RawHTTP.request(emulator.address, "POST", "/emulator/console", headers: [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Sec-Fetch-Site", "cross-site"),
            ("Origin", emulator.issuer),
        ], body: formBody([("action", "rotate-keys")]))
        XCTAssertEqual(crossSite.status, 403)
        XCTAssertEqual(try emulator.keys().keyIDs.count, 1)
    }
}
