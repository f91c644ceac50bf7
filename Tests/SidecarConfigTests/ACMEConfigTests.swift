import XCTest
import SidecarConfig

/// `tls.acme`: defaults, the rules against public_url and listen, and refusals with their lines.
final class ACMEConfigTests: XCTestCase {
    func testDefaultsAreLetsEncryptTLSALPNAndPublicURLsHost() throws {
        let config = try parse(minimal(plus: "tls:\n  acme:\n    email: ops@example.com\n"))
        let acme = try XCTUnwrap(config.acme)
        XCTAssertNil(config.tls)
        XCTAssertEqual(acme.directory.description, Config.ACME.letsEncrypt)
        XCTAssertEqual(acme.domains, ["app.example.com"])
        XCTAssertEqual(acme.challenge, .tlsALPN01)
        XCTAssertEqual(acme.keyType, .ecdsaP256)
        XCTAssertEqual(acme.email, "ops@example.com")
        XCTAssertEqual(acme.storage, "/var/lib/sidecar/acme")
        // listen is 8080, not 443: the CA cannot reach a tls-alpn-01 answer without a forward.
        XCTAssertEqual(config.warnings.map(\.path), ["tls.acme.challenge"])
    }

    func testStagingShorthandHTTP01AndEAB() throws {
        let config = try parse(minimal(plus: """
            tls:
              acme:
                directory: letsencrypt-staging
                challenge: http-01
                http_listen: 0.0.0.0:80
                key_type: rsa-2048
                domains: [app.example.com, www.example.com]
                eab_kid: kid-1
                eab_hmac_key: env:EAB
            """), environment: Fixture.environment.merging(["EAB": "c2VjcmV0LWtleS1ieXRlcw"]) { $1 })
        let acme = try XCTUnwrap(config.acme)
        XCTAssertEqual(acme.directory.description, Config.ACME.letsEncryptStaging)
        XCTAssertEqual(acme.challenge, .http01)
        XCTAssertEqual(acme.keyType, .rsa2048)
        XCTAssertEqual(acme.domains, ["app.example.com", "www.example.com"])
        XCTAssertEqual(acme.eabKeyID, "kid-1")
        XCTAssertEqual(acme.eabHMACKey?.string, "secret-key-bytes")
        XCTAssertEqual(config.warnings.map(\.path), [])
    }

    func testRefusalsNameKeyAndLine() throws {
        let cases: [(String, String, String)] = [
            ("    email: not-an-address\n", "tls.acme.email", ""),
            ("    directory: http://ca.example/dir\n", "tls.acme.directory", "must be https"),
            ("    domains: [other.example.com]\n", "tls.acme.domains", "app.example.com"),
            ("    domains: [10.0.0.1]\n", "tls.acme.domains", "no IP addresses"),
            ("    domains: ['*.example.com']\n", "tls.acme.domains", "no wildcards"),
            ("    domains: []\n", "tls.acme.domains", "lists no domain"),
            ("    challenge: dns-01\n", "tls.acme.challenge", ""),
            ("    eab_kid: only-the-id\n", "tls.acme.eab_hmac_key", "needs both"),
            ("    challenge: http-01\n    http_listen: 0.0.0.0:8080\n", "tls.acme.http_listen", "port of its own"),
            ("    email: ops@example.com\n  cert_file: AuthKey.p8\n  key_file: AuthKey.p8\n", "tls.cert_file", "not both"),
        ]
        for (lines, path, mention) in cases {
            let found = try errors(minimal(plus: "tls:\n  acme:\n" + lines))
            XCTAssertTrue(found.contains { $0.path.hasPrefix(path) && (mention.isEmpty || $0.description.contains(mention)) && $0.line != nil },
                          "\(lines): \(found.map { "\($0.path) \($0.line ?? -1) \($0.description)" })")
        }
    }

    func testPlainHTTPPublicURLIsRefused() throws {
        let yaml = Fixture.minimal.replacingOccurrences(of: "public_url: https://app.example.com", with: "public_url: http://localhost:8080")
        let found = try errors(yaml + "tls:\n  acme:\n    domains: [app.example.com]\n")
        XCTAssertTrue(found.contains { $0.description.contains("make public_url https://") }, "\(found)")
    }

    /// Each key is declared once (doc, default, parser) and the documentation is checked
    /// against the declarations, like every other declared section.
    func testEveryTLSAndACMEKeyIsDeclared() throws {
        let declared = Set(Config.declaredKeys.map(\.path).filter { $0.hasPrefix("tls.acme.") })
        XCTAssertEqual(declared, Set(["email", "directory", "domains", "challenge", "http_listen", "key_type", "storage",
                                      "share_via_store", "eab_kid", "eab_hmac_key", "ca_file"].map { "tls.acme." + $0 }))
        let storage = try XCTUnwrap(Config.declaredKeys.first { $0.path == "tls.acme.storage" })
        XCTAssertEqual(storage.defaultShown, "/var/lib/sidecar/acme")
        XCTAssertEqual(storage.variable, "SIDECAR_TLS_ACME_STORAGE")
        XCTAssertEqual(Set(Config.declaredKeys.map(\.path).filter { $0.hasPrefix("tls.") && !$0.hasPrefix("tls.acme.") }),
                       ["tls.cert_file", "tls.key_file"])
    }
}
