import XCTest
import SidecarConfig

/// `limits.upstream_connections_per_client`, `upstream_max_connections` and
/// `upstreams.<name>.max_connections`: their defaults, inheritance and bounds.
final class UpstreamCapsConfigTests: XCTestCase {
    func testDefaults() throws {
        let config = try parse(Fixture.minimal)
        XCTAssertEqual(config.limits.upstreamConnectionsPerClient, 32)
        XCTAssertEqual(config.upstreamMaxConnections, 0)
    }

    func testANamedUpstreamInheritsTheTopLevelCapUnlessItSetsItsOwn() throws {
        let config = try parse(minimal(plus: """
            upstream_max_connections: 200
            limits:
              upstream_connections_per_client: 8
            upstreams:
              api:
                url: http://127.0.0.1:9001
              slow:
                url: http://127.0.0.1:9002
                max_connections: 10
            rules:
              - path: /api/**
                upstream: api
              - path: /slow/**
                upstream: slow

            """))
        XCTAssertEqual(config.upstreamMaxConnections, 200)
        XCTAssertEqual(config.limits.upstreamConnectionsPerClient, 8)
        XCTAssertEqual(config.upstreams.map(\.maxConnections), [200, 10])
    }

    func testOutOfRangeValuesAreRefusedByKey() throws {
        for (yaml, path) in [
            ("limits:\n  upstream_connections_per_client: 0\n", "limits.upstream_connections_per_client"),
            ("limits:\n  upstream_connections_per_client: 1001\n", "limits.upstream_connections_per_client"),
            ("upstream_max_connections: -1\n", "upstream_max_connections"),
            ("upstreams:\n  api:\n    url: http://127.0.0.1:9001\n    max_connections: many\n", "upstreams.api.max_connections"),
        ] {
            let found = try errors(minimal(plus: yaml))
            XCTAssertEqual(found.map(\.path), [path], yaml)
        }
    }
}
