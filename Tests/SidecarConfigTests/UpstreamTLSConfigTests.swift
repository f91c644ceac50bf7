import XCTest
import SidecarConfig

/// `upstream_tls` and `upstreams.<name>.tls`: read for `https://` upstreams only, a client
/// certificate with its key, verification off only with a warning, nothing inherited.
final class UpstreamTLSConfigTests: XCTestCase {
    private func https(_ lines: String) -> String {
        minimal(plus: lines).replacingOccurrences(of: "upstream: http://127.0.0.1:3000", with: "upstream: https://app.internal:8443")
    }

    func testTheKeysOfAnHTTPSUpstream() throws {
        // AuthKey.p8 stands for any readable file: the PEM is read when the proxy starts.
        let config = try parse(https("""
            upstream_tls:
              ca_file: AuthKey.p8
              server_name: App.Example
              client_certificate: AuthKey.p8
              client_key: AuthKey.p8

            """))
        XCTAssertEqual(config.upstream, .https(host: "app.internal", port: 8443, basePath: ""))
        XCTAssertEqual(config.upstreamTLS.caFile?.hasSuffix("/AuthKey.p8"), true)
        XCTAssertEqual(config.upstreamTLS.serverName, "app.example")
        XCTAssertNotNil(config.upstreamTLS.clientCertificate)
        XCTAssertTrue(config.upstreamTLS.verify)
        XCTAssertEqual(config.warnings, [])
    }

    func testTLSKeysOnAPlainUpstreamAreRefused() throws {
        let found = try errors(minimal(plus: "upstream_tls:\n  ca_file: AuthKey.p8\n"))
        XCTAssertEqual(found.map(\.path), ["upstream_tls"])
        XCTAssertEqual(found.first?.line, 12, "the line of upstream_tls's value")
        XCTAssertTrue(found.first?.message.contains("https:// upstream only") == true)
        let named = try errors(minimal(plus: """
            upstreams:
              api:
                url: unix:/run/api.sock
                tls:
                  verify: false

            """))
        XCTAssertEqual(named.map(\.path), ["upstreams.api.tls"])
    }

    func testAClientCertificateNeedsItsKey() throws {
        XCTAssertEqual(try errors(https("upstream_tls:\n  client_certificate: AuthKey.p8\n")).map(\.path),
                       ["upstream_tls.client_key"])
        XCTAssertEqual(try errors(https("upstream_tls:\n  client_key: AuthKey.p8\n")).map(\.path),
                       ["upstream_tls.client_certificate"])
    }

    func testMissingFilesAndBadNamesAreRefusedByKey() throws {
        for (yaml, path) in [
            ("upstream_tls:\n  ca_file: missing.pem\n", "upstream_tls.ca_file"),
            ("upstream_tls:\n  server_name: \"bad name\"\n", "upstream_tls.server_name"),
            ("upstream_tls:\n  verify: maybe\n", "upstream_tls.verify"),
        ] {
            XCTAssertEqual(try errors(https(yaml)).map(\.path), [path], yaml)
        }
    }

    func testVerifyFalseIsAWarning() throws {
        let config = try parse(https("upstream_tls:\n  verify: false\n"))
        XCTAssertFalse(config.upstreamTLS.verify)
        XCTAssertEqual(config.warnings.map(\.path), ["upstream_tls.verify"])
    }

    func testANamedUpstreamHasItsOwnAndInheritsNone() throws {
        let config = try parse(https("""
            upstream_tls:
              client_certificate: AuthKey.p8
              client_key: AuthKey.p8
            upstreams:
              api:
                url: https://api.internal
                tls:
                  server_name: api.example
            rules:
              - path: /api/**
                upstream: api

            """))
        let api = try XCTUnwrap(config.upstreams.first)
        XCTAssertEqual(api.target, .https(host: "api.internal", port: 443, basePath: ""))
        XCTAssertEqual(api.tls.serverName, "api.example")
        XCTAssertNil(api.tls.clientCertificate, "a client key is never offered to another server")
    }
}
