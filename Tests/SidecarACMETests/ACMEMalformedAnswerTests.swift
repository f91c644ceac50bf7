import SidecarCrypto
import XCTest

@testable import SidecarACME

/// Whatever the CA (or something in its place) answers, the client ends with an `ACMEError`
/// that names the URL and what was wrong: never a crash, never a guess.
final class ACMEMalformedAnswerTests: XCTestCase {
    private func client(_ ca: ScriptedCA) throws -> ACMEClient {
        ACMEClient(directoryURL: try XCTUnwrap(ACMEURL(ScriptedCA.base + "/dir")),
                   accountKey: .es256(try P256PrivateKey.generate()), transport: ca)
    }

    private func assertDirectoryRefused(_ body: String, status: Int = 200, mentions: String,
                                        file: StaticString = #filePath, line: UInt = #line) throws {
        let ca = ScriptedCA()
        ca.on("/dir", ScriptedCA.json(status, body))
        XCTAssertThrowsError(try client(ca).loadDirectory(), file: file, line: line) { error in
            guard let error = error as? ACMEError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertTrue(error.message.contains(mentions), error.message, file: file, line: line)
            XCTAssertTrue(error.message.contains(ScriptedCA.base + "/dir"), error.message, file: file, line: line)
        }
    }

    func testDirectoryAnswersThatAreNotTheProtocol() throws {
        try assertDirectoryRefused("not json", mentions: "not JSON")
        try assertDirectoryRefused("[1,2]", mentions: "not a JSON object")
        try assertDirectoryRefused(#"{"newNonce":1}"#, mentions: "\"newNonce\" is not a string")
        try assertDirectoryRefused(#"{"newNonce":"https://ca.test/n","newAccount":"https://ca.test/a"}"#,
                                   mentions: "\"newOrder\" is missing")
        try assertDirectoryRefused(#"{"newNonce":"ftp://ca.test/n","newAccount":"x","newOrder":"y"}"#,
                                   mentions: "not an https URL")
        // Plain http to a host off this machine is refused like the Apple client refuses it.
        try assertDirectoryRefused(#"{"newNonce":"http://ca.test/n","newAccount":"https://ca.test/a","newOrder":"https://ca.test/o"}"#,
                                   mentions: "not an https URL")
        try assertDirectoryRefused(#"{"newNonce":"https://user@ca.test/n","newAccount":"https://ca.test/a","newOrder":"https://ca.test/o"}"#,
                                   mentions: "not an https URL")
        try assertDirectoryRefused("", status: 302, mentions: "redirected")
        try assertDirectoryRefused("<html>", status: 500, mentions: "unexpected status 500")
        try assertDirectoryRefused(String(repeating: "[", count: 100_000), mentions: "not JSON")
    }

    func testHugeBodyIsRefusedBeforeParsing() throws {
        let huge = "{\"pad\":\"" + String(repeating: "a", count: ACMEJSON.maxBytes) + "\"}"
        try assertDirectoryRefused(huge, mentions: "too large")
    }

    func testOrderWithWrongTypes() throws {
        let cases: [(String, String)] = [
            (#"{"status":7,"authorizations":[],"finalize":"https://ca.test/f"}"#, "\"status\" is not a string"),
            (#"{"status":"weird","authorizations":[],"finalize":"https://ca.test/f"}"#, "unknown order status"),
            (#"{"status":"pending","authorizations":"x","finalize":"https://ca.test/f"}"#, "not an array"),
            (#"{"status":"pending","authorizations":[5],"finalize":"https://ca.test/f"}"#, "other than an https URL"),
            (#"{"status":"pending","authorizations":[]}"#, "\"finalize\" is missing"),
        ]
        for (body, mention) in cases {
            let ca = ScriptedCA.standard()
            ca.on("/order", ScriptedCA.json(201, body, [("Location", ScriptedCA.base + "/order/1")]))
            let acme = try client(ca)
            try acme.register(contact: nil, binding: nil)
            XCTAssertThrowsError(try acme.newOrder(domains: ["a.example"], replaces: nil)) { error in
                XCTAssertTrue("\(error)".contains(mention), "\(body): \(error)")
            }
        }
    }

    func testOrderWithoutLocationAndAccountWithoutLocation() throws {
        let ca = ScriptedCA.standard()
        ca.on("/account", ScriptedCA.json(201, "{}"))
        XCTAssertThrowsError(try client(ca).register(contact: nil, binding: nil)) { error in
            XCTAssertTrue("\(error)".contains("without a valid Location"), "\(error)")
        }
    }

    func testAuthorizationAnswers() throws {
        let ca = ScriptedCA.standard()
        ca.on("/authz/1", ScriptedCA.json(200, #"{"status":"pending","challenges":[]}"#))
        ca.on("/authz/2", ScriptedCA.json(200, #"{"status":"pending","identifier":{"value":"a.example"},"challenges":[{"type":"http-01"}]}"#))
        let acme = try client(ca)
        try acme.register(contact: nil, binding: nil)
        XCTAssertThrowsError(try acme.authorization(ACMEURL(ScriptedCA.base + "/authz/1")!)) { error in
            XCTAssertTrue("\(error)".contains("\"identifier\" is missing"), "\(error)")
        }
        XCTAssertThrowsError(try acme.authorization(ACMEURL(ScriptedCA.base + "/authz/2")!)) { error in
            XCTAssertTrue("\(error)".contains("\"url\" is missing"), "\(error)")
        }
    }

    func testTokensThatCouldCarryAPathAreRefused() {
        XCTAssertTrue(ACMEAuthorization.isValidToken("evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA"))
        for token in ["", "short", "../../../../etc/passwd-aaaaaaaaaaaa", "abc def ghijklmnopqrstuvwxyz",
                      "aaaaaaaaaaaaaaaaaaaaaaaa\r\nX: y", String(repeating: "a", count: 300)] {
            XCTAssertFalse(ACMEAuthorization.isValidToken(token), token)
        }
    }

    func testNoncesMustBeBase64URL() {
        XCTAssertTrue(ACMEClient.isValidNonce("oFvnlFP1wIhRlYS2jTaXbA"))
        XCTAssertFalse(ACMEClient.isValidNonce(""))
        XCTAssertFalse(ACMEClient.isValidNonce("a b"))
        XCTAssertFalse(ACMEClient.isValidNonce(String(repeating: "A", count: 300)))
    }

    func testCertificateDownloadThatIsNotPEM() throws {
        let ca = ScriptedCA.standard()
        ca.on("/cert/1", ScriptedCA.json(200, #"{"oops":true}"#))
        let acme = try client(ca)
        try acme.register(contact: nil, binding: nil)
        XCTAssertThrowsError(try acme.certificate(ACMEURL(ScriptedCA.base + "/cert/1")!)) { error in
            XCTAssertTrue("\(error)".contains("not a PEM chain"), "\(error)")
        }
    }

    func testRenewalInfoWindow() throws {
        let body = Array(#"{"suggestedWindow":{"start":"2026-01-02T00:00:00Z","end":"2026-01-03T00:00:00.5Z"}}"#.utf8)
        let window = try ACMERenewalWindow(body, url: "u")
        let moment = window.randomMoment()
        XCTAssertTrue(moment >= window.start && moment < window.end)
        XCTAssertThrowsError(try ACMERenewalWindow(Array(#"{"suggestedWindow":{"start":"yesterday","end":"x"}}"#.utf8), url: "u"))
        XCTAssertThrowsError(try ACMERenewalWindow(Array(
            #"{"suggestedWindow":{"start":"2026-01-03T00:00:00Z","end":"2026-01-02T00:00:00Z"}}"#.utf8), url: "u"))
        XCTAssertThrowsError(try ACMERenewalWindow(Array("{}".utf8), url: "u"))
    }

    func testRetryAfterForms() {
        XCTAssertEqual(RetryAfterField.seconds("120"), 120)
        XCTAssertEqual(RetryAfterField.seconds("99999999"), RetryAfterField.maxSeconds)
        XCTAssertNil(RetryAfterField.seconds("-5"))
        XCTAssertNil(RetryAfterField.seconds("soon"))
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        XCTAssertEqual(RetryAfterField.seconds("Tue, 14 Nov 2023 22:13:27 GMT", now: now), 7)
    }

    func testTransportFailureIsATransportError() throws {
        let ca = ScriptedCA()
        ca.failure = ACMEError(.transport, "acme: https://ca.test/dir: connectFailed")
        XCTAssertThrowsError(try client(ca).loadDirectory()) { error in
            XCTAssertEqual((error as? ACMEError)?.kind, .transport)
        }
    }
}
