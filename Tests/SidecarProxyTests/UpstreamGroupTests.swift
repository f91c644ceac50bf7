import SidecarConfig
import SidecarEvent
import XCTest

@testable import SidecarProxy

/// `UpstreamGroup.choose` and `ServerHealth`: which server the next exchange goes to.
final class UpstreamGroupTests: XCTestCase {
    private var loop: EventLoop!
    private var reaper: Reaper!
    private var budget: UpstreamBudget!

    override func setUpWithError() throws {
        loop = try EventLoop()
        reaper = Reaper(loop: loop)
        budget = UpstreamBudget(loop: loop, limit: 100)
    }

    private func group(weights: [Int], balancing: Config.Balancing = Config.Balancing()) throws -> UpstreamGroup {
        let pools = try weights.enumerated().map { index, weight in
            let pool = UpstreamPool(
                loop: loop, address: try SocketAddress(host: "127.0.0.1", port: UInt16(3001 + index)), capacity: 4,
                reaper: reaper, budget: budget)
            pool.weight = weight
            pool.balancing = weights.count > 1 ? balancing : nil
            pool.text = Array("s\(index)".utf8)
            return pool
        }
        let configured = pools.map { Config.UpstreamServer(target: .http(host: $0.address.ipText, port: $0.address.port, basePath: "")) }
        return UpstreamGroup(
            name: "default", configured: configured, servers: pools, balancing: balancing, connectTimeoutMs: 1_000
        ) { [loop, reaper, budget] _, address in
            UpstreamPool(loop: loop!, address: address, capacity: 4, reaper: reaper!, budget: budget!)
        }
    }

    private func picks(_ group: UpstreamGroup, _ count: Int, nowMs: Int64 = 0, avoiding: UpstreamPool? = nil) -> [String] {
        (0..<count).map { _ in
            String(decoding: group.choose(avoiding: avoiding, nowMs: nowMs) { _ in true }.text, as: UTF8.self)
        }
    }

    func testSmoothWeightedRoundRobin() throws {
        XCTAssertEqual(picks(try group(weights: [1, 1, 2]), 8), ["s2", "s0", "s1", "s2", "s2", "s0", "s1", "s2"])
        XCTAssertEqual(picks(try group(weights: [1]), 3), ["s0", "s0", "s0"])
    }

    func testAServerTakenOutIsSkippedThenTriedAlone() throws {
        var balancing = Config.Balancing()
        balancing.maxFails = 2
        balancing.failTimeout = .seconds(10)
        let servers = try group(weights: [1, 1], balancing: balancing)
        let sick = servers.servers[0]
        sick.serverFailed(nowMs: 0)
        XCTAssertTrue(sick.health.isUp, "one failure of two allowed")
        sick.serverFailed(nowMs: 0)
        XCTAssertEqual(sick.health.state, .out(untilMs: 10_000))
        XCTAssertEqual(Set(picks(servers, 4, nowMs: 5_000)), ["s1"])
        // Back from its time out: one exchange tries it, the others keep away until it answers.
        let tries = picks(servers, 4, nowMs: 10_000)
        XCTAssertEqual(tries.filter { $0 == "s0" }.count, 1, "\(tries)")
        sick.serverFailed(nowMs: 10_100)
        XCTAssertEqual(sick.health.state, .out(untilMs: 20_100), "a failed try takes it out again at once")
        _ = picks(servers, 2, nowMs: 20_100)
        sick.serverAnswered()
        XCTAssertTrue(sick.health.isUp)
        XCTAssertEqual(Set(picks(servers, 4, nowMs: 20_200)), ["s0", "s1"])
    }

    func testAvoidingTheServerThatFailedAndAllOut() throws {
        var balancing = Config.Balancing()
        balancing.maxFails = 1
        let servers = try group(weights: [1, 1], balancing: balancing)
        XCTAssertEqual(Set(picks(servers, 4, avoiding: servers.servers[0])), ["s1"])
        servers.servers[0].serverFailed(nowMs: 0)
        servers.servers[1].serverFailed(nowMs: 5)
        XCTAssertEqual(picks(servers, 1, nowMs: 6), ["s0"], "all out: the one back soonest")
    }

    func testANameThatMovesReplacesItsServersKeepingThoseStillThere() throws {
        let servers = try group(weights: [1])
        let first = servers.servers[0]
        let moved = [first.address, try SocketAddress(host: "127.0.0.9", port: 3001)]
        servers.replaceAddresses(ofEntry: 0, with: moved)
        XCTAssertEqual(servers.servers.map(\.address), moved)
        XCTAssertTrue(servers.servers[0] === first, "the address still there keeps its pool and idle connections")
        XCTAssertNotNil(first.balancing, "two servers now: health is kept")
        servers.replaceAddresses(ofEntry: 0, with: [moved[1]])
        XCTAssertEqual(servers.servers.count, 1)
        XCTAssertFalse(servers.servers[0] === first)
    }

    func testAServerThatAdmitsIsPreferred() throws {
        let servers = try group(weights: [1, 1, 1])
        let full = servers.servers[1]
        let chosen = (0..<6).map { _ in servers.choose(nowMs: 0) { $0 !== full } }
        XCTAssertFalse(chosen.contains { $0 === full })
    }
}
