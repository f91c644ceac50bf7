import XCTest
@testable import SidecarApple
import SidecarCrypto

/// The JSON control API's request rules: a body must be declared JSON, a browser
/// on another site may not change the emulator's state, and `notify` posts only to loopback
/// unless the emulator was started with `--allow-notify-to-any-host`.
final class ControlRequestRulesTests: XCTestCase {
    private let fault = Array(#"{"fault":"invalid_grant"}"#.utf8)

    private func armed(_ emulator: EmulatorFixture) throws -> JSONValue? {
        try emulator.get("/emulator/faults").json?.objectValue?["armed"]
    }

    private func post(_ emulator: EmulatorFixture, _ path: String, _ headers: [(String, String)], _ body: [UInt8],
                      method: String = "POST", timeoutSeconds: Int = 5) throws -> HTTPReply {
        try RawHTTP.request(emulator.address, method, path, headers: headers, body: body, timeoutSeconds: timeoutSeconds)
    }

    func testABodyThatIsNotDeclaredJSONIsRefused() throws {
        let emulator = try EmulatorFixture()
        let plain = try post(emulator, "/emulator/faults", [("Content-Type", "text/plain")], fault)
        XCTAssertEqual(plain.status, 415, plain.text)
        XCTAssertTrue(plain.text.contains("application/json"), plain.text)
        let form = try post(emulator, "/emulator/faults", [("Content-Type", "application/x-www-form-urlencoded")],
                            formBody([("fault", "invalid_grant")]))
        XCTAssertEqual(form.status, 415, form.text)
        XCTAssertEqual(try post(emulator, "/emulator/faults", [], fault).status, 415, "a body without a Content-Type")
        XCTAssertEqual(try armed(emulator), .array([]), "nothing was armed")

        let json = try post(emulator, "/emulator/faults", [("Content-Type", "Application/JSON; charset=utf-8")], fault)
        XCTAssertEqual(json.status, 200, json.text)
        XCTAssertEqual(try armed(emulator), .array([.string("invalid_grant")]))
    }

    func testRequestsWithoutABodyNeedNoContentType() throws {
        let emulator = try EmulatorFixture()
        XCTAssertEqual(try emulator.postJSON("/emulator/faults", #"{"fault":"expired"}"#).status, 200)
        XCTAssertEqual(try post(emulator, "/emulator/faults", [], [], method: "DELETE").status, 200)
        XCTAssertEqual(try armed(emulator), .array([]))
        // Rotation generates an RSA key: the one answer that is not immediate on a loaded machine.
        XCTAssertEqual(try post(emulator, "/emulator/rotate-keys", [], [], timeoutSeconds: 30).status, 200)
        XCTAssertEqual(try emulator.keys().keyIDs.count, 2)
    }

    func testCrossSiteRequestsAreRefused() throws {
        let emulator = try EmulatorFixture()
        let json = ("Content-Type", "application/json")
        let crossSite: [[(String, String)]] = [
            [("Origin", "https://evil.example")],
            [("Origin", "null")],
            [("Sec-Fetch-Site", "cross-site")],
            [("Sec-Fetch-Site", "same-site")],
            [("Sec-Fetch-Site", "cross-site"), ("Origin", emulator.issuer)],
            [("Sec-Fetch-Site", "same-site"), ("Origin", emulator.issuer)],
        ]
        for headers in crossSite {
            let reply = try post(emulator, "/emulator/faults", [json] + headers, fault)
            XCTAssertEqual(reply.status, 403, "\(headers): \(reply.text)")
            XCTAssertFalse(reply.text.isEmpty)
        }
        XCTAssertEqual(try armed(emulator), .array([]), "nothing was armed")

        for headers in [[("Origin", emulator.issuer)], [("Sec-Fetch-Site", "same-origin"), ("Origin", emulator.issuer)],
                        [("Sec-Fetch-Site", "same-origin"), ("Origin", "null")], [("Sec-Fetch-Site", "none")], []] {
            XCTAssertEqual(try post(emulator, "/emulator/faults", [json] + headers, fault).status, 200, "\(headers)")
        }
        XCTAssertEqual(try post(emulator, "/emulator/faults", [("Sec-Fetch-Site", "cross-site")], [], method: "DELETE").status,
                       403, "a request without a body is still checked for its site")
        XCTAssertEqual(try post(emulator, "/emulator/rotate-keys", [("Origin", "https://evil.example")], []).status, 403)
        XCTAssertEqual(try emulator.keys().keyIDs.count, 1)
        XCTAssertEqual(try armed(emulator)?.jsonText.contains("invalid_grant"), true, "the faults stayed armed")
    }

    func testNotifyRefusesHostsOtherThanLoopback() throws {
        let emulator = try EmulatorFixture()
        for url in ["http://10.0.0.1/hook", "https://example.com/.auth/apple/notifications", "http://localhost.example.com/",
                    "http://0.0.0.0:1/", "http://[::ffff:127.0.0.1]:1/"] {
            let reply = try emulator.postJSON("/emulator/notify", #"{"type":"consent-revoked","sub":"x","url":"\#(url)"}"#)
            XCTAssertEqual(reply.status, 403, "\(url): \(reply.text)")
            XCTAssertTrue(reply.error?.contains("--allow-notify-to-any-host") ?? false, reply.text)
        }
        for url in ["http://127.0.0.1:1/hook", "http://127.3.2.1:1/hook", "http://LOCALHOST:1/hook", "http://[::1]:1/hook"] {
            let reply = try emulator.postJSON("/emulator/notify", #"{"type":"consent-revoked","sub":"x","url":"\#(url)"}"#)
            XCTAssertEqual(reply.status, 200, "\(url): \(reply.text)")
            XCTAssertEqual(reply.json?.objectValue?["delivered"], .bool(false), "nothing listens there")
        }
    }

    func testNotifyPostsToAnyHostWithTheFlag() throws {
        let emulator = try EmulatorFixture(allowNotifyToAnyHost: true)
        for url in ["http://10.0.0.1/hook", "https://example.com/.auth/apple/notifications"] {
            // Delivery may fail here (no route, no DNS); only the loopback rule is under test.
            let reply = try post(emulator, "/emulator/notify", [("Content-Type", "application/json")],
                                 Array(#"{"type":"consent-revoked","sub":"x","url":"\#(url)"}"#.utf8), timeoutSeconds: 20)
            XCTAssertEqual(reply.status, 200, "\(url): \(reply.text)")
            XCTAssertEqual(reply.json?.objectValue?["url"]?.stringValue, url, "an attempt was made")
        }
    }

    func testTheConsoleKeepsItsOwnFormsAndItsStricterRule() throws {
        let emulator = try EmulatorFixture()
        let form = ("Content-Type", "application/x-www-form-urlencoded")
        // What Chromium sends for the console's forms: its pages set Referrer-Policy: no-referrer.
        let own = try post(emulator, "/emulator/console", [form, ("Sec-Fetch-Site", "same-origin"), ("Origin", "null")],
                           formBody([("action", "arm-fault"), ("fault", "expired")]))
        XCTAssertEqual(own.status, 303, own.text)
        XCTAssertEqual(try armed(emulator), .array([.string("expired")]))
        for headers in [[], [("Sec-Fetch-Site", "none")], [("Origin", "null")]] {
            let reply = try post(emulator, "/emulator/console", [form] + headers, formBody([("action", "disarm-faults")]))
            XCTAssertEqual(reply.status, 403, "\(headers): a console form must show it comes from the console")
        }
        XCTAssertEqual(try armed(emulator), .array([.string("expired")]))
    }

    func testTheEmulatorsOriginIsHowBrowsersWriteIt() {
        XCTAssertEqual(RequestSite.origin(of: "http://127.0.0.1:9443"), "http://127.0.0.1:9443")
        XCTAssertEqual(RequestSite.origin(of: "https://Apple.Example:443/base"), "https://apple.example")
        XCTAssertEqual(RequestSite.origin(of: "http://[::1]:80"), "http://[::1]")
        XCTAssertEqual(RequestSite.origin(of: "https://host:8443"), "https://host:8443")
    }

    func testTheConsoleShowsWhyANotificationWasNotSent() throws {
        let emulator = try EmulatorFixture()
        let sent = try post(emulator, "/emulator/console", [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Origin", emulator.issuer),
        ], formBody([("action", "notify"), ("type", "consent-revoked"), ("email", "maria.ruiz@example.com"),
                     ("url", "https://app.example.com/.auth/apple/notifications")]))
        XCTAssertEqual(sent.status, 303, "the console's own forms keep their path")
        let page = try RawHTTP.request(emulator.address, "GET", "/emulator", headers: [("Accept", "text/html")]).text
        XCTAssertTrue(page.contains("--allow-notify-to-any-host"), "the refusal names the flag")
    }
}
