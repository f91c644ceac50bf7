import XCTest
import SidecarConfig

/// The Apple key must be one that can sign client secrets (ES256: P-256), and a key that
/// cannot is a config error at the key's line and column — what `check` and `run` both print.
/// Every key here was generated for these tests only.
final class AppleKeyTests: XCTestCase {
    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAYRNoKvZbRJE25N1o2
        LRE1KfEIyuGucFNpa4nUHEqtWHU3osm1aAbhXqcGKmyl4O2hZANiAAQHpkplBFrj
        Ju30QWL1vCI9BsdSrUNL6AH8CIO5P+hfSoQBsNxibySlfttoTpcQ2xyuuam2TfJT
        XEljoZPM8jvHIXucQr1MToYbj8RmPEq1eGtPFSv2Tc+FLmDfNzQ3a+E=
        -----END PRIVATE KEY-----

        """

    static let rsa = """
        -----BEGIN PRIVATE KEY-----
        MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBAL6JZXRrspas0yJH
        ij+FnEFWuF9a+4I6FpXothPtIsxQxT9+QT3szcXCWgVDp/WPJDLt9bLC2uefPgHo
        OuKJW4iFeHh0pPpQ/ClE4EVi50gRDyQwJ+WzCNyZpsDAJMN1XnixP7++w4Yy59HW
        0PwMoTRc6PkV3K//s/mgb7Rv01PRAgMBAAECgYEAgtIJQ57yVnvA1ydxZ13QRBhL
        rMTmLKq/eRv3b8UAgHHwjECegOsG+YIQls62Ema+fu1dJeidrixqwZp2W7XdjrUF
        KsPZvnBAMSKhZt3d0CDh/uxdQhsuAYb5kQAvxXEvs2LfMyQX6isDp51Q2iC8NoUX
        L3x8yldxrO0ioisz4EECQQDzc/FOgZC1p0QgmxemeK10qlbv/C8VsgkXkqJgeCOC
        ZhJbC+esbsvIs41jB4xu/IhRujUxns8x/RkXT7b+SgnZAkEAyFtKXV9evYPNCBUh
        RPQbvHx4YEkfyiQ6Prp+6R9lglm2IB3zn4EQK2sdMk5xYEnKTCfiMz3G1h99P2OM
        YDwmuQJADowDAznit7gC7h/WTfAwDSSQhU6AUb+No4bzhOgo1wXaWu5fLYKBUsDH
        1f8BeTBFxPxnaUuf/dCtyyLMQG2UIQJAOiNLY+bNrf5121eOTNzsw3f20jHF2LlE
        cXlaZDkpEncHwzANxoYD9CVj1nouqfsfiZO1LptJfE6s4Fz5md86eQJBAO8rcd70
        qh+gYapc0BGco+BdPvt275iwOtPA0ZL7IyuHr50V8UT37daLGTG5JE67AWjfJwlK
        FXGIpkYJV8mHwck=
        -----END PRIVATE KEY-----

        """

    static let ed25519 = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIJObvYczZu8e3+LqYKC2fBKet3AwxrUbzwb5itpiJJDI
        -----END PRIVATE KEY-----

        """

    static let secp256k1 = """
        -----BEGIN PRIVATE KEY-----
        MIGEAgEAMBAGByqGSM49AgEGBSuBBAAKBG0wawIBAQQgMIx9nIYIdXRtVOi8Pj7G
        B1eiEjq3WJCtc12GCSCYD6yhRANCAARE1TBO0cyB30pSpxchsGvIlfe57oBjxYUc
        h1tldl37In/f0FWj5jRlTRzqcM6izT8ERN5eP0OR/2WWYRPpRvh8
        -----END PRIVATE KEY-----

        """

    /// P-256 in OpenSSL's traditional SEC1 form: the same curve, so accepted.
    static let p256SEC1 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIHBFPYVH0OV89CXCVhibWGTc+FfKztUPRtx1oggZ1c6ZoAoGCCqGSM49
        AwEHoUQDQgAEYCqbcdVy4t9t132X6A4PCffETqPa/yQspBPfEofasFJBGYQQZPKk
        idx0/lZKxvjGw9lnU49GRLzWPU8ntR+L+Q==
        -----END EC PRIVATE KEY-----

        """

    /// P-256, PKCS#8 encrypted with the password "test".
    static let encrypted = """
        -----BEGIN ENCRYPTED PRIVATE KEY-----
        MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjjpkFM/eGMMQICCAAw
        DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEFxySmQtJD3I8gi8feSr0bUEgZBO
        8IFcT0LgYAewE3OUd0x1MNUCjW3qlqTSlwJqtZdXno0/s2UrSx6avx9F7H9oHDCI
        xalNdfQmFWC8AGa2oePPRhdEGmqtQEM545USwj1qgUAJ7J+u6Ce+aWlMzgsoVsLI
        Zx0S17r8m/ukqrxFBqlyRDE7l+ex1lgsblMCaaqRQgXX3DILvWJ0CZEIcynPxNU=
        -----END ENCRYPTED PRIVATE KEY-----

        """

    /// The one error the minimal config gives with `pem` as its AuthKey.p8.
    private func fileError(_ pem: String, file: StaticString = #filePath, line: UInt = #line) throws -> ConfigError? {
        let directory = try Fixture.directory(self)
        try pem.write(toFile: directory + "/AuthKey.p8", atomically: true, encoding: .utf8)
        do {
            _ = try Config.parse(yaml: Fixture.minimal, file: "sidecar.yaml", environment: Fixture.environment,
                                 baseDirectory: directory)
            XCTFail("the key was accepted", file: file, line: line)
            return nil
        } catch {
            XCTAssertEqual(error.errors.count, 1, "\(error)", file: file, line: line)
            return error.errors.first
        }
    }

    private var fromEnvironment: String {
        Fixture.minimal.replacingOccurrences(of: "private_key_file: AuthKey.p8", with: "private_key: env:APPLE_KEY")
    }

    func testRSAKeyFileIsRefusedAtItsLineAndColumn() throws {
        let error = try XCTUnwrap(try fileError(Self.rsa))
        XCTAssertEqual(error.kind, .invalidValue)
        XCTAssertEqual(error.description,
                       "sidecar.yaml:8:21: apple.private_key_file: AuthKey.p8 is an RSA key; Apple client secrets need a P-256 (ES256) key")
    }

    /// `assertion.private_key_file` goes through the same check, worded for the assertion.
    func testAssertionKeyFileMustBeP256AtItsLineAndColumn() throws {
        let directory = try Fixture.directory(self)
        try Self.rsa.write(toFile: directory + "/assertion-rsa.pem", atomically: true, encoding: .utf8)
        let yaml = Fixture.minimal + "assertion:\n  enabled: true\n  private_key_file: \(directory)/assertion-rsa.pem\n"
        let error = try XCTUnwrap(try errors(yaml).first)
        XCTAssertEqual(error.path, "assertion.private_key_file")
        XCTAssertEqual(error.line, 13)
        XCTAssertEqual(error.column, 21)
        XCTAssertEqual(error.message,
                       "\(directory)/assertion-rsa.pem is an RSA key; the identity assertion is signed with ES256 and needs a P-256 key")
        XCTAssertFalse(error.description.contains("MII"))
        // A P-256 key (the fixture's AuthKey.p8) is read and kept; the warning about a generated key is not given.
        let config = try parse(Fixture.minimal + "assertion:\n  enabled: true\n  private_key_file: AuthKey.p8\n")
        XCTAssertNotNil(config.assertion.privateKey)
        XCTAssertFalse(config.warnings.contains { $0.path == "assertion.private_key_file" })
        let generated = try parse(Fixture.minimal + "assertion:\n  enabled: true\n")
        XCTAssertNil(generated.assertion.privateKey)
        XCTAssertTrue(generated.warnings.contains { $0.path == "assertion.private_key_file" && $0.message.contains("lost on restart") })
    }

    func testP384KeyFileIsRefused() throws {
        XCTAssertEqual(try fileError(Self.p384)?.description,
                       "sidecar.yaml:8:21: apple.private_key_file: AuthKey.p8 is a P-384 key; Apple client secrets need a P-256 (ES256) key")
    }

    func testOtherKeyTypesAreNamed() throws {
        XCTAssertEqual(try fileError(Self.ed25519)?.message,
                       "AuthKey.p8 is a key of type ED25519; Apple client secrets need a P-256 (ES256) key")
        XCTAssertEqual(try fileError(Self.secp256k1)?.message,
                       "AuthKey.p8 is an EC key on secp256k1; Apple client secrets need a P-256 (ES256) key")
    }

    func testKeyFromEnvironmentIsCheckedTheSameWay() throws {
        let errors = try errors(fromEnvironment, environment: Fixture.environment.merging(["APPLE_KEY": Self.p384]) { $1 })
        XCTAssertEqual(errors.map(\.description),
                       ["sidecar.yaml:8:16: apple.private_key: env:APPLE_KEY is a P-384 key; Apple client secrets need a P-256 (ES256) key"])
    }

    func testInlineKeyIsCheckedWithoutShowingIt() throws {
        let indented = Self.rsa.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n")
        let yaml = Fixture.minimal.replacingOccurrences(of: "private_key_file: AuthKey.p8", with: "private_key: |\n" + indented)
        let error = try XCTUnwrap(try errors(yaml).first)
        XCTAssertEqual(error.path, "apple.private_key")
        XCTAssertEqual(error.message, "the inline key is an RSA key; Apple client secrets need a P-256 (ES256) key")
        XCTAssertFalse(error.description.contains("MIIC"))
    }

    func testDamagedAndEncryptedKeysAreRefused() throws {
        let truncated = """
            -----BEGIN PRIVATE KEY-----
            MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQgsbhX3ZtSCVDqI4oH
            -----END PRIVATE KEY-----

            """
        XCTAssertEqual(try fileError(truncated)?.message,
                       "AuthKey.p8 cannot be read as a private key (damaged or truncated?); use the .p8 file downloaded from Apple as it is")
        // Refused without asking for a password (OpenSSL would prompt on a terminal).
        XCTAssertEqual(try fileError(Self.encrypted)?.message,
                       "AuthKey.p8 is password-protected; the sidecar needs it unencrypted, as Apple's AuthKey_<key id>.p8 is")
    }

    func testP256KeysLoad() throws {
        XCTAssertEqual(try parse(Fixture.minimal).apple.privateKey.string, Fixture.pem)
        let sec1 = try parse(fromEnvironment, environment: Fixture.environment.merging(["APPLE_KEY": Self.p256SEC1]) { $1 })
        XCTAssertEqual(sec1.apple.privateKey.source, "env:APPLE_KEY")
    }
}
