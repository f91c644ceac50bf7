import XCTest

@testable import SidecarConfig

/// A URL's `user:password@` never reaches a configuration error or warning, whether the URL
/// came from the file or a `SIDECAR_*` variable, and however long the password.
final class UserinfoRedactionTests: XCTestCase {
    private let secret = "hunter2"

    private func file(replacing key: String, with value: String) -> String {
        Fixture.minimal.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("\(key):") ? "\(key): \"\(value)\"" : String($0) }.joined(separator: "\n")
    }

    func testRedactedMasksEveryURLsUserinfo() {
        let cases = [
            ("https://user:pw@host/x", "https://***@host/x"),
            ("\"http://u:p@h:1\" and \"redis://:p@r:6379/0\"", "\"http://***@h:1\" and \"redis://***@r:6379/0\""),
            ("http://u:p/w?#@host:80/p", "http://***@host:80/p"),
            ("http://u:p@w@host", "http://***@host"),
            ("http://host/a", "http://host/a"),
            ("maria@example.com", "maria@example.com"),
            ("no url at all", "no url at all"),
        ]
        for (text, expected) in cases { XCTAssertEqual(Userinfo.redacted(text), expected, text) }
    }

    func testQuotedRedactsBeforeItShortens() {
        let long = "https://user:" + String(repeating: "p", count: 200) + "@host.example/"
        let shown = quoted(long)
        XCTAssertFalse(shown.contains("ppp"), shown)
        XCTAssertTrue(shown.hasPrefix("\"https://***@host.example"), shown)
    }

    func testErrorsFromTheFileShowNoPassword() throws {
        for (key, value) in [
            ("upstream", "http://deploy:\(secret)@127.0.0.1:3000"),
            ("upstream", "https://deploy:\(secret)@127.0.0.1:3000"),
            ("public_url", "https://admin:\(secret)@app.example.com"),
            ("public_url", "https://admin:\(secret)" + String(repeating: "x", count: 150) + "@app.example.com"),
        ] {
            let found = try errors(file(replacing: key, with: value))
            XCTAssertFalse(found.isEmpty)
            for error in found {
                XCTAssertFalse(error.description.contains(secret), error.description)
                XCTAssertFalse(error.message.contains(secret), error.message)
            }
            XCTAssertTrue(found.contains { $0.path == key && $0.description.contains("://***@") }, "\(found)")
        }
        let tracing = try errors(Fixture.minimal + "tracing:\n  otlp_endpoint: \"https://otel:\(secret)@collector:4318\"\n")
        XCTAssertEqual(tracing.map(\.path), ["tracing.otlp_endpoint"])
        XCTAssertFalse(tracing[0].description.contains(secret), tracing[0].description)
        XCTAssertTrue(tracing[0].description.contains("https://***@collector:4318"), tracing[0].description)
    }

    func testErrorsFromTheEnvironmentShowNoPassword() throws {
        let found = try errors(Fixture.minimal, environment: Fixture.environment.merging([
            "SIDECAR_UPSTREAM": "http://u:\(secret)@127.0.0.1:3000",
            "SIDECAR_PUBLIC_URL": "https://u:\(secret)@app.example.com",
            "SIDECAR_TRACING_OTLP_ENDPOINT": "http://u:\(secret)@collector:4318",
        ]) { $1 })
        XCTAssertEqual(Set(found.map(\.path)), ["upstream", "public_url", "tracing.otlp_endpoint"], "\(found)")
        for error in found {
            XCTAssertNotNil(error.variable)
            XCTAssertFalse(error.description.contains(secret), error.description)
            XCTAssertTrue(error.description.contains("://***@"), error.description)
        }
    }

    func testAWarningShowsNoPassword() {
        let warning = ConfigWarning(path: "revocations.ca_file", message: "ignored for redis://:\(secret)@cache:6379")
        XCTAssertEqual(warning.description, "revocations.ca_file: ignored for redis://***@cache:6379")
    }
}
