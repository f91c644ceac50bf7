import Foundation
import XCTest
import SidecarConfig

/// `env:` / `file:` / inline secrets, resolved at load time with errors that never show a value.
final class SecretTests: XCTestCase {
    private func withSecrets(_ list: String) -> String {
        Fixture.minimal.replacingOccurrences(of: "[env:SIDECAR_COOKIE_SECRET]", with: list)
    }

    private func write(_ content: String, _ name: String, in directory: String) throws -> String {
        let path = directory + "/" + name
        try content.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testEnvSecretSetIsDecoded() throws {
        let config = try parse(Fixture.minimal)
        XCTAssertEqual(config.session.secrets.first?.bytes, Array(Data(base64Encoded: Fixture.cookieSecret) ?? Data()))
    }

    func testEnvSecretUnset() throws {
        let errors = try errors(Fixture.minimal, environment: [:])
        XCTAssertEqual(errors.count, 1)
        XCTAssertEqual(errors.first?.kind, .unresolvable)
        XCTAssertEqual(errors.first?.path, "session.secrets[0]")
        XCTAssertEqual(errors.first?.line, 10)
        XCTAssertEqual(errors.first?.column, 13)
        XCTAssertEqual(errors.first?.message,
                       "environment variable SIDECAR_COOKIE_SECRET is not set (make one with `sidecar secret`, then export it)")
    }

    func testEnvSecretEmpty() throws {
        let errors = try errors(Fixture.minimal, environment: ["SIDECAR_COOKIE_SECRET": ""])
        XCTAssertEqual(errors.first?.message, "environment variable SIDECAR_COOKIE_SECRET is empty (make one with `sidecar secret`, then export it)")
    }

    func testFileSecretTrimsOneTrailingNewline() throws {
        let directory = try Fixture.directory(self)
        _ = try write(Fixture.cookieSecret + "\n", "cookie", in: directory)
        _ = try write(Fixture.cookieSecret + "\r\n", "cookie-crlf", in: directory)
        let yaml = withSecrets("[file:cookie, \"file:\(directory)/cookie-crlf\"]")
        let config = try Config.parse(yaml: yaml, environment: [:], baseDirectory: directory)
        XCTAssertEqual(config.session.secrets.map(\.bytes.count), [32, 32])
        XCTAssertEqual(config.session.secrets.map(\.source), ["file:\(directory)/cookie", "file:\(directory)/cookie-crlf"])
    }

    func testFileSecretTrimsOnlyOneNewline() throws {
        let directory = try Fixture.directory(self)
        _ = try write(Fixture.cookieSecret + "\n\n", "cookie", in: directory)
        do {
            _ = try Config.parse(yaml: withSecrets("[file:cookie]"), environment: [:], baseDirectory: directory)
            XCTFail("two newlines are content, not base64")
        } catch {
            XCTAssertEqual(error.errors.first?.message,
                           "secret from file:\(directory)/cookie is not base64 (generate one with `sidecar secret`)")
        }
    }

    func testFileSecretUnreadable() throws {
        let directory = try Fixture.directory(self)
        let missing = try errors(withSecrets("[file:/nonexistent/cookie]"))
        XCTAssertEqual(missing.first?.kind, .unresolvable)
        XCTAssertEqual(missing.first?.path, "session.secrets[0]")
        XCTAssertEqual(missing.first?.message, #"cannot read "/nonexistent/cookie": No such file or directory"#)
        let notFile = try errors(withSecrets("[\"file:\(directory)\"]"))
        XCTAssertEqual(notFile.first?.message, "\"\(directory)\" is not a regular file")
    }

    func testShortAndNonBase64SecretsAreRefusedWithoutShowingThem() throws {
        let short = "c2hvcnQtc2VjcmV0"
        let errors = try errors(withSecrets("[\(short), \"not base64 at all!\"]"))
        XCTAssertEqual(errors.map(\.path), ["session.secrets[0]", "session.secrets[1]"])
        XCTAssertEqual(errors.first?.message,
                       "secret from inline decodes to 12 bytes; at least 32 are needed (generate one with `sidecar secret`)")
        XCTAssertEqual(errors.last?.message, "secret from inline is not base64 (generate one with `sidecar secret`)")
        for error in errors {
            XCTAssertFalse(error.description.contains(short))
            XCTAssertFalse(error.description.contains("not base64 at all"))
        }
    }

    func testBase64URLAndUnpaddedSecretsAreAccepted() throws {
        let bytes = (0..<40).map { UInt8($0 * 6 + 3) }
        let standard = Data(bytes).base64EncodedString()
        let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let config = try parse(withSecrets("[env:A, env:B]"), environment: ["A": standard, "B": url])
        XCTAssertEqual(config.session.secrets.map(\.bytes), [bytes, bytes])
        XCTAssertTrue(config.warnings.contains { $0.path == "session.secrets" })
    }

    func testRotationKeepsOrderAndInlineSecretWarns() throws {
        let second = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        let config = try parse(withSecrets("[env:SIDECAR_COOKIE_SECRET, \"\(second)\"]"))
        XCTAssertEqual(config.session.secrets.map(\.source), ["env:SIDECAR_COOKIE_SECRET", "inline"])
        XCTAssertEqual(config.session.secrets.last?.bytes, (0..<32).map { UInt8($0) })
        XCTAssertEqual(config.warnings.map(\.description), ["session.secrets: holds a secret inline; prefer env:NAME or file:/path"])
    }

    func testEmptySecretList() throws {
        let errors = try errors(withSecrets("[]"))
        XCTAssertEqual(errors.map(\.message), ["needs at least one secret (generate one with `sidecar secret`)"])
    }

    func testApplePrivateKeyFromEnv() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "private_key_file: AuthKey.p8", with: "private_key: env:APPLE_KEY")
        let config = try parse(yaml, environment: Fixture.environment.merging(["APPLE_KEY": Fixture.pem]) { $1 })
        XCTAssertEqual(config.apple.privateKey.string, Fixture.pem)
        XCTAssertEqual(config.apple.privateKey.source, "env:APPLE_KEY")
        XCTAssertNil(config.apple.privateKeyFile)
    }

    func testApplePrivateKeyMustLookLikePEM() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "private_key_file: AuthKey.p8", with: "private_key: env:APPLE_KEY")
        let errors = try errors(yaml, environment: Fixture.environment.merging(["APPLE_KEY": "MIGTAgEAMBMG"]) { $1 })
        XCTAssertEqual(errors.first?.path, "apple.private_key")
        XCTAssertEqual(errors.first?.message,
                       "env:APPLE_KEY is not a PEM private key (expected -----BEGIN PRIVATE KEY-----, as in Apple's AuthKey_<key id>.p8)")
        XCTAssertFalse(errors.first?.description.contains("MIGTAgEAMBMG") ?? true)
    }

    func testApplePrivateKeyFileMissing() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "AuthKey.p8", with: "/nonexistent/AuthKey.p8")
        let error = try errors(yaml).first
        XCTAssertEqual(error?.kind, .unresolvable)
        XCTAssertEqual(error?.path, "apple.private_key_file")
        XCTAssertEqual(error?.line, 8)
        XCTAssertEqual(error?.column, 21)
        XCTAssertEqual(error?.message, #"cannot read "/nonexistent/AuthKey.p8": No such file or directory"#)
    }

    func testApplePrivateKeyFileXorInline() throws {
        let both = Fixture.minimal.replacingOccurrences(
            of: "  private_key_file: AuthKey.p8\n", with: "  private_key_file: AuthKey.p8\n  private_key: env:APPLE_KEY\n")
        let error = try errors(both).first
        XCTAssertEqual(error?.kind, .conflict)
        XCTAssertEqual(error?.path, "apple.private_key")
        XCTAssertEqual(error?.line, 9)
        XCTAssertEqual(error?.message, "set either apple.private_key_file or apple.private_key, not both")

        let neither = Fixture.minimal.replacingOccurrences(of: "  private_key_file: AuthKey.p8\n", with: "")
        let missing = try errors(neither).first
        XCTAssertEqual(missing?.kind, .missingKey)
        XCTAssertEqual(missing?.path, "apple.private_key_file")
        XCTAssertEqual(missing?.line, 5)
        XCTAssertEqual(missing?.column, 3)
    }
}

/// `admin.token`: a secret reference, long enough to guess at no rate, sent in a header.
final class AdminTokenConfigTests: XCTestCase {
    private let token = String(repeating: "k", count: 40)

    func testATokenFromTheEnvironmentIsKeptAndComparedBySource() throws {
        let config = try parse(minimal(plus: "admin:\n  token: env:ADMIN_TOKEN\n"),
                               environment: Fixture.environment.merging(["ADMIN_TOKEN": token]) { $1 })
        XCTAssertEqual(config.admin.token?.string, token)
        XCTAssertEqual(config.admin.token?.source, "env:ADMIN_TOKEN")
        XCTAssertFalse("\(config.admin)".contains(token), "printing the section never shows the token")
        XCTAssertNil(try parse(Fixture.minimal).admin.token, "no token by default")
    }

    func testAShortOrSpacedTokenIsRefusedNamingTheKeyAndPlace() throws {
        for value in ["short", String(repeating: "k", count: 31), "k k" + String(repeating: "k", count: 40),
                      String(repeating: "k", count: 513)] {
            let errors = try errors(minimal(plus: "admin:\n  token: env:ADMIN_TOKEN\n"),
                                    environment: Fixture.environment.merging(["ADMIN_TOKEN": value]) { $1 })
            XCTAssertEqual(errors.count, 1, value)
            XCTAssertEqual(errors.first?.path, "admin.token")
            XCTAssertEqual(errors.first?.line, 12)
            XCTAssertEqual(errors.first?.column, 10)
            XCTAssertTrue(errors.first?.message.contains("32 to 512 visible ASCII characters") == true, errors.first?.message ?? "")
            XCTAssertFalse(errors.first?.message.contains(value) == true, "the value is never shown")
        }
    }
}
