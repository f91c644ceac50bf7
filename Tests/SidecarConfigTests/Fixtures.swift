import Foundation
import XCTest
import SidecarConfig

/// Shared helpers: a temporary directory with an Apple key, and a minimal valid config.
enum Fixture {
    /// base64 of 32 bytes.
    static let cookieSecret = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="

    /// A P-256 key in PKCS#8, as Apple's `.p8` (generated for these tests only). The config
    /// reader parses the key, so it must be a real one.
    static let pem = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzOd5fDvlU1N64QjN
        8ga8/VHSlBx2p7ZVKqadPVrs1TKhRANCAASlo8BLrPJbCiuh9Uf8tXAsgcHvtS/h
        LbD4uC7dTUptCG6w379TeFHjdBVAoA7jPr6VbI6cLcRWTnF6/4hk8Z36
        -----END PRIVATE KEY-----

        """

    /// A fresh directory holding `AuthKey.p8`; removed by the test case's teardown.
    static func directory(_ testCase: XCTestCase) throws -> String {
        let path = NSTemporaryDirectory() + "sidecar-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try pem.write(toFile: path + "/AuthKey.p8", atomically: true, encoding: .utf8)
        testCase.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    static let minimal = """
        listen: 0.0.0.0:8080
        public_url: https://app.example.com
        upstream: http://127.0.0.1:3000
        apple:
          team_id: ABCDE12345
          client_id: com.example.web
          key_id: XYZ123ABCD
          private_key_file: AuthKey.p8
        session:
          secrets: [env:SIDECAR_COOKIE_SECRET]

        """

    static let environment = ["SIDECAR_COOKIE_SECRET": cookieSecret]
}

extension XCTestCase {
    func parse(_ yaml: String, environment: [String: String] = Fixture.environment,
               file: StaticString = #filePath, line: UInt = #line) throws -> Config {
        let directory = try Fixture.directory(self)
        do {
            return try Config.parse(yaml: yaml, file: "sidecar.yaml", environment: environment, baseDirectory: directory)
        } catch {
            XCTFail("unexpected errors:\n\(error)", file: file, line: line)
            throw error
        }
    }

    /// The errors `yaml` produces (fails the test if it loads).
    func errors(_ yaml: String, environment: [String: String] = Fixture.environment,
                file: StaticString = #filePath, line: UInt = #line) throws -> [ConfigError] {
        let directory = try Fixture.directory(self)
        do {
            _ = try Config.parse(yaml: yaml, file: "sidecar.yaml", environment: environment, baseDirectory: directory)
            XCTFail("expected errors, but the config loaded", file: file, line: line)
            return []
        } catch {
            return error.errors
        }
    }

    /// The minimal config with `lines` appended (top-level keys).
    func minimal(plus lines: String) -> String { Fixture.minimal + lines }
}
