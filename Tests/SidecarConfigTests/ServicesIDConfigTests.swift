import XCTest
import SidecarConfig

/// `apple.client_id`: one Services ID or a list of them, the first being the web flow's.
final class ServicesIDConfigTests: XCTestCase {
    private func yaml(clientID: String) -> String {
        Fixture.minimal.replacingOccurrences(of: "  client_id: com.example.web", with: "  client_id: \(clientID)")
    }

    func testOneOrSeveral() throws {
        let one = try parse(Fixture.minimal)
        XCTAssertEqual(one.apple.clientID, "com.example.web")
        XCTAssertEqual(one.apple.clientIDs, ["com.example.web"])
        let several = try parse(yaml(clientID: "[com.example.web, com.example.android-web]"))
        XCTAssertEqual(several.apple.clientID, "com.example.web")
        XCTAssertEqual(several.apple.clientIDs, ["com.example.web", "com.example.android-web"])
    }

    func testFromTheEnvironmentCommaSeparated() throws {
        let config = try parse(Fixture.minimal, environment: Fixture.environment.merging(
            ["SIDECAR_APPLE_CLIENT_ID": "com.example.a,com.example.b"]) { $1 })
        XCTAssertEqual(config.apple.clientIDs, ["com.example.a", "com.example.b"])
    }

    func testEmptyDuplicateAndInvalidListsAreErrorsAtTheKey() throws {
        let cases: [(String, String, String)] = [
            ("[]", "apple.client_id", "names no value"),
            ("[com.example.web, com.example.web]", "apple.client_id", "twice"),
            ("[com.example.web, \"not an id\"]", "apple.client_id[1]", "Services ID"),
        ]
        for (value, path, message) in cases {
            let found = try errors(yaml(clientID: value))
            XCTAssertEqual(found.map(\.path), [path], value)
            XCTAssertEqual(found.first?.line, 6, value)
            XCTAssertTrue(found.first?.message.contains(message) ?? false, "\(value): \(found)")
        }
    }
}
