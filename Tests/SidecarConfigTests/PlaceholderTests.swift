import Foundation
import XCTest
import SidecarConfig

/// The Debian package's `sidecar.yaml` is complete but holds stand-ins (its team and key ids, a
/// stand-in key it generates): a service started on it could only answer 502, so loading it
/// fails, naming the file, key, line and what to put there, and `ExecStartPre=sidecar check`
/// keeps the unit from starting.
final class PlaceholderTests: XCTestCase {
    private var packagedText: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            return try String(contentsOf: root.appendingPathComponent("packaging/debian/sidecar.yaml"), encoding: .utf8)
        }
    }

    /// The packaged file as installed: its secret and stand-in key where postinst makes them.
    private func installed(_ text: String, in directory: String) throws -> String {
        try Fixture.cookieSecret.write(toFile: directory + "/cookie-secret", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: directory + "/AuthKey.p8", toPath: directory + "/AuthKey_placeholder.p8")
        return text.replacingOccurrences(of: "/etc/sidecar/", with: directory + "/")
            .replacingOccurrences(of: "file:/var/lib/sidecar/store", with: "memory")
    }

    func testThePackagedConfigurationIsRefusedAtEachPlaceholder() throws {
        let directory = try Fixture.directory(self)
        let text = try installed(try packagedText, in: directory)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func line(_ prefix: String) -> Int? { lines.firstIndex { $0.hasPrefix(prefix) }.map { $0 + 1 } }
        let errors: [ConfigError]
        do {
            _ = try Config.parse(yaml: text, file: "/etc/sidecar/sidecar.yaml", environment: [:], baseDirectory: directory)
            return XCTFail("the packaged configuration with its placeholders loaded")
        } catch {
            errors = error.errors
        }
        XCTAssertEqual(errors.map(\.path), ["apple.team_id", "apple.key_id", "apple.private_key_file"], "\(errors)")
        let byPath = Dictionary(uniqueKeysWithValues: errors.map { ($0.path, $0) })
        XCTAssertEqual(byPath["apple.team_id"]?.line, line("  team_id:"))
        XCTAssertEqual(byPath["apple.key_id"]?.line, line("  key_id:"))
        XCTAssertEqual(byPath["apple.private_key_file"]?.line, line("  private_key_file:"))
        let teamID = try XCTUnwrap(byPath["apple.team_id"]).description
        XCTAssertTrue(teamID.hasPrefix("/etc/sidecar/sidecar.yaml:\(line("  team_id:") ?? 0):"), teamID)
        XCTAssertTrue(teamID.contains("\"TEAMID0000\" is a placeholder: put your Team ID here"), teamID)
        XCTAssertTrue(try XCTUnwrap(byPath["apple.key_id"]).message.contains("Key ID"))
        let key = try XCTUnwrap(byPath["apple.private_key_file"]).message
        XCTAssertTrue(key.contains("stand-in key") && key.contains("AuthKey_<key id>.p8"), key)
    }

    func testFilledInTheSameFileLoads() throws {
        let directory = try Fixture.directory(self)
        try FileManager.default.copyItem(atPath: directory + "/AuthKey.p8", toPath: directory + "/AuthKey_XYZ123ABCD.p8")
        let text = try installed(try packagedText, in: directory)
            .replacingOccurrences(of: "TEAMID0000", with: "ABCDE12345")
            .replacingOccurrences(of: "KEYID00000", with: "XYZ123ABCD")
            .replacingOccurrences(of: "AuthKey_placeholder.p8", with: "AuthKey_XYZ123ABCD.p8")
        let config = try Config.parse(yaml: text, file: "sidecar.yaml", environment: [:], baseDirectory: directory)
        XCTAssertEqual(config.apple.teamID, "ABCDE12345")
    }

    func testAPlaceholderFromTheEnvironmentOrAsAKeySecretIsRefusedToo() throws {
        let fromEnvironment = try errors(Fixture.minimal, environment: Fixture.environment.merging(
            ["SIDECAR_APPLE_KEY_ID": "KEYID00000"]) { $1 })
        XCTAssertEqual(fromEnvironment.map(\.path), ["apple.key_id"], "\(fromEnvironment)")
        let directory = try Fixture.directory(self)
        try FileManager.default.copyItem(atPath: directory + "/AuthKey.p8", toPath: directory + "/AuthKey_placeholder.p8")
        let yaml = Fixture.minimal.replacingOccurrences(
            of: "private_key_file: AuthKey.p8", with: "private_key: file:\(directory)/AuthKey_placeholder.p8")
        let asSecret = try errors(yaml)
        XCTAssertEqual(asSecret.map(\.path), ["apple.private_key"], "\(asSecret)")
        XCTAssertTrue(asSecret.first?.message.contains("stand-in key") ?? false, "\(asSecret)")
    }
}
