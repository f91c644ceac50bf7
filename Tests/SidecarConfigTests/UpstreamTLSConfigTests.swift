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

/// `upstream` (or `url`) as a list of servers with weights, and how they are balanced.
final class UpstreamServersConfigTests: XCTestCase {
    func testAListOfServersWithWeights() throws {
        let yaml = minimal(plus: "upstream_balance: least_connections\nupstream_max_fails: 5\n")
            .replacingOccurrences(of: "upstream: http://127.0.0.1:3000",
                                  with: "upstream: [http://10.0.0.1:3000, \"http://10.0.0.2:3000 weight=3\"]")
        let config = try parse(yaml)
        XCTAssertEqual(config.upstream, .http(host: "10.0.0.1", port: 3000, basePath: ""))
        XCTAssertEqual(config.upstreamServers.map(\.weight), [1, 3])
        XCTAssertEqual(config.upstreamServers.map(\.description), ["http://10.0.0.1:3000", "http://10.0.0.2:3000 weight=3"])
        XCTAssertEqual(config.upstreamBalancing.balance, .leastConnections)
        XCTAssertEqual(config.upstreamBalancing.maxFails, 5)
    }

    func testOneURLIsOneServer() throws {
        let config = try parse(Fixture.minimal)
        XCTAssertEqual(config.upstreamServers, [Config.UpstreamServer(target: config.upstream)])
        XCTAssertEqual(config.upstreamBalancing, Config.Balancing())
    }

    func testServersThatDifferOrBadWeightsAreRefused() throws {
        for (list, path) in [
            ("[http://a:1, https://b:2]", "upstream[1]"),
            ("[http://a:1/x, http://b:2/y]", "upstream[1]"),
            ("[\"http://a:1 weight=0\"]", "upstream[0]"),
            ("[\"http://a:1 weight=101\"]", "upstream[0]"),
            ("[\"http://a:1 heavy\"]", "upstream[0]"),
            ("[]", "upstream"),
            ("[http://a:1, \"http://a:1 weight=2\"]", "upstream[1]"),
            ("[http://a:1, http://b:1, http://a:1]", "upstream[2]"),
        ] {
            let yaml = Fixture.minimal.replacingOccurrences(of: "upstream: http://127.0.0.1:3000", with: "upstream: \(list)")
            XCTAssertEqual(try errors(yaml).map(\.path), [path], list)
        }
    }

    func testANamedUpstreamInheritsTheBalancingUnlessItSetsItsOwn() throws {
        let config = try parse(minimal(plus: """
            upstream_fail_timeout: 30s
            upstreams:
              api:
                url: [http://127.0.0.1:9001, http://127.0.0.1:9002]
                balance: least_connections
            rules:
              - path: /api/**
                upstream: api

            """))
        let api = try XCTUnwrap(config.upstreams.first)
        XCTAssertEqual(api.servers.count, 2)
        XCTAssertEqual(api.balancing.balance, .leastConnections)
        XCTAssertEqual(api.balancing.failTimeout, .seconds(30))
    }
}

/// `upstream_health_check` and `upstreams.<name>.health_check`.
final class HealthCheckConfigTests: XCTestCase {
    func testOffByDefaultAndItsKeys() throws {
        XCTAssertNil(try parse(Fixture.minimal).upstreamHealthCheck.path)
        let config = try parse(minimal(plus: "upstream_health_check:\n  path: /healthz?deep=1\n  status: 2xx\n  interval: 5s\n"))
        XCTAssertEqual(config.upstreamHealthCheck.path, "/healthz?deep=1")
        XCTAssertEqual(config.upstreamHealthCheck.status, Config.ExpectedStatus(low: 200, high: 299))
        XCTAssertEqual(config.upstreamHealthCheck.interval, .seconds(5))
    }

    func testBadValuesAreRefusedByKey() throws {
        for (yaml, path) in [
            ("upstream_health_check:\n  path: healthz\n", "upstream_health_check.path"),
            ("upstream_health_check:\n  path: \"/a b\"\n", "upstream_health_check.path"),
            ("upstream_health_check:\n  status: 6xx\n", "upstream_health_check.status"),
            ("upstream_health_check:\n  status: 300-200\n", "upstream_health_check.status"),
            ("upstream_health_check:\n  timeout: 0s\n", "upstream_health_check.timeout"),
        ] {
            XCTAssertEqual(try errors(minimal(plus: yaml)).map(\.path), [path], yaml)
        }
        XCTAssertEqual(Config.ExpectedStatus(low: 200, high: 399).description, "200-399")
        XCTAssertEqual(Config.ExpectedStatus(low: 204, high: 204).description, "204")
    }
}

/// `resolver` and `upstream_resolve_interval`.
final class ResolverConfigTests: XCTestCase {
    func testResolverAddresses() throws {
        XCTAssertNil(try parse(Fixture.minimal).resolver)
        XCTAssertEqual(try parse(minimal(plus: "resolver: 10.96.0.10\n")).resolver?.description, "10.96.0.10:53")
        XCTAssertEqual(try parse(minimal(plus: "resolver: \"[fd00::a]:5353\"\n")).resolver?.description, "[fd00::a]:5353")
        for text in ["dns.example", "10.0.0.1:0", "10.0.0.1:x"] {
            XCTAssertEqual(try errors(minimal(plus: "resolver: \"\(text)\"\n")).map(\.path), ["resolver"], text)
        }
        XCTAssertEqual(try parse(minimal(plus: "upstream_resolve_interval: 5s\n")).upstreamBalancing.resolveInterval, .seconds(5))
    }
}
