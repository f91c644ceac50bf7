import SidecarConfig
import SidecarEvent
import XCTest

@testable import SidecarProxy

final class ServerLabelsTests: XCTestCase {
    func testEachServerKeepsItsSlotAndWorkersShareThem() {
        let labels = ServerLabels()
        let a = labels.slot(upstream: "default", server: "127.0.0.1:3001")
        let b = labels.slot(upstream: "default", server: "127.0.0.1:3002")
        let api = labels.slot(upstream: "api", server: "127.0.0.1:3001")
        XCTAssertEqual(Set([a, b, api]).count, 3, "one slot per upstream and server")
        XCTAssertEqual(labels.slot(upstream: "default", server: "127.0.0.1:3002"), b, "another worker finds the same slot")
    }

    func testServersPastTheCapAreCountedAsOtherUnderTheirUpstream() {
        let labels = ServerLabels()
        for index in 0..<ServerLabels.named { _ = labels.slot(upstream: "default", server: "10.0.0.\(index):80") }
        let past = labels.slot(upstream: "default", server: "10.0.1.1:80")
        XCTAssertEqual(labels.slot(upstream: "default", server: "10.0.1.2:80"), past)
        let apiPast = labels.slot(upstream: "api", server: "10.0.1.1:80")
        XCTAssertNotEqual(apiPast, past, "each upstream has its own other")
        let assigned = labels.assigned
        XCTAssertTrue(assigned.contains { $0.slot == past && $0.upstream == "default" && $0.server == "other" })
        XCTAssertTrue(assigned.contains { $0.slot == apiPast && $0.upstream == "api" && $0.server == "other" })
        XCTAssertFalse(assigned.contains { $0.server == "10.0.1.1:80" })
        // More upstreams than can be configured at once (renamed by reload after reload): the last slot takes the rest.
        for index in 0..<ServerLabels.otherSlots { _ = labels.slot(upstream: "u\(index)", server: "x") }
        XCTAssertEqual(labels.slot(upstream: "late", server: "x"), ServerLabels.slots - 1)
        XCTAssertLessThanOrEqual(labels.assigned.count, ServerLabels.slots)
        XCTAssertTrue(labels.assigned.allSatisfy { $0.slot < ServerLabels.slots })
    }

    func testUpstreamMetricsNameTheServer() {
        let board = MetricsBoard(workers: 2)
        let first = board.serverLabels.slot(upstream: "default", server: "app.test:3000@127.0.0.2")
        let second = board.serverLabels.slot(upstream: "default", server: "app.test:3000@127.0.0.3")
        var a = WorkerMetrics(), b = WorkerMetrics()
        a.upstreamLatency[first].record(ms: 3)
        b.upstreamLatency[first].record(ms: 4)
        b.upstreamConnectFailures[second] += 2
        board.publish(a, worker: 0)
        board.publish(b, worker: 1)
        let lines = Set(board.render().split(separator: "\n").map(String.init))
        for expected in [
            "sidecar_upstream_response_seconds_count{upstream=\"default\",server=\"app.test:3000@127.0.0.2\"} 2",
            "sidecar_upstream_response_seconds_count{upstream=\"default\",server=\"app.test:3000@127.0.0.3\"} 0",
            "sidecar_upstream_connect_failures_total{upstream=\"default\",server=\"app.test:3000@127.0.0.3\"} 2",
            "sidecar_upstream_connect_failures_total{upstream=\"default\",server=\"app.test:3000@127.0.0.2\"} 0",
        ] {
            XCTAssertTrue(lines.contains(expected), expected)
        }
        XCTAssertFalse(lines.contains { $0.contains("server=\"other\"") }, "the catch-all is shown once it counts")
    }

    func testLabelValuesAreEscaped() {
        XCTAssertEqual(MetricsBoard.labels(upstream: "default", server: "unix:/run/a\"b\\c\nd"),
                       "upstream=\"default\",server=\"unix:/run/a\\\"b\\\\c\\nd\"")
    }

    func testReadinessProbesTheAddressesANameResolvesToNow() throws {
        let resolved = ResolvedNames()
        let start = try SocketAddress(host: "127.0.0.2", port: 3000)
        let target = ReadinessTarget(
            name: "default", label: "upstream", entries: [(.http(host: "app.test", port: 3000, basePath: ""), start)], connectTimeoutMs: 1_000)
        XCTAssertEqual(target.servers(resolved: resolved).map(\.text), ["app.test:3000@127.0.0.2"], "before any lookup")
        resolved.record("APP.test", port: 3000, [try SocketAddress(host: "127.0.0.3", port: 3000),
                                                 try SocketAddress(host: "127.0.0.4", port: 3000)])
        XCTAssertEqual(target.servers(resolved: resolved).map(\.text), ["app.test:3000@127.0.0.3", "app.test:3000@127.0.0.4"])
        resolved.record("app.test", port: 3000, [])
        XCTAssertEqual(target.servers(resolved: resolved).count, 2, "a name that stops resolving keeps its last addresses")
        resolved.keep(only: [])
        XCTAssertEqual(target.servers(resolved: resolved).map(\.text), ["app.test:3000@127.0.0.2"], "forgotten on reload")
        XCTAssertTrue(target.namesServers(target.servers(resolved: resolved)), "a name's address is named")
        let fixed = ReadinessTarget(
            name: "default", label: "upstream", entries: [(.http(host: "127.0.0.2", port: 3000, basePath: ""), start)], connectTimeoutMs: 1_000)
        XCTAssertFalse(fixed.namesServers(fixed.servers(resolved: resolved)))
    }
}
