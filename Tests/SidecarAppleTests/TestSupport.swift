import CEvent
import Foundation
import SidecarApple
import SidecarEvent
import XCTest

/// The Python TLS/HTTP servers of Fixtures/tls_test_server.py, started once per test run.
/// The script exits when our end of its stdin closes, i.e. when the test process ends.
final class TestServers: @unchecked Sendable {
    let caFile: String
    let ports: [String: UInt16]
    private let process: Process
    private let stdin: Pipe

    static let shared: Result<TestServers, Error> = Result { try TestServers() }

    static func get() throws -> TestServers { try shared.get() }

    private init() throws {
        let workdir = FileManager.default.temporaryDirectory
            .appendingPathComponent("sidecar-apple-tests-\(getpid())")
        try FileManager.default.createDirectory(at: workdir, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_test_server.py")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, workdir.path]
        stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = stdout.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw CocoaError(.fileReadCorruptFile) }
            line.append(chunk)
        }
        guard let json = try JSONSerialization.jsonObject(with: line) as? [String: Any],
              let ca = json["ca"] as? String else { throw CocoaError(.fileReadCorruptFile) }
        caFile = ca
        var ports: [String: UInt16] = [:]
        for (name, value) in json {
            if let port = value as? Int { ports[name] = UInt16(port) }
        }
        self.ports = ports
    }

    func port(_ name: String) -> UInt16 { ports[name] ?? 0 }
}

/// One libevent loop driven by the test until a request completes: the product's own
/// `EventLoop` (the client runs on a worker's in production), so its timers keep the
/// product's clock.
final class TestLoop {
    private let loop: EventLoop
    var base: OpaquePointer { loop.base }

    init() {
        loop = try! EventLoop()
    }

    struct Outcome {
        var result: AppleHTTPResult?
        /// From just before `send` to the completion, on CLOCK_MONOTONIC (the clock the
        /// client's deadlines are kept against): never shorter than a deadline that fired.
        var seconds: Double
        var completions: Int
    }

    /// Seconds on CLOCK_MONOTONIC, read fresh (the wall clock may step; libevent's cached
    /// time may lag).
    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Sends and runs the loop until the completion fires (or `limit` seconds pass), then keeps
    /// turning the loop briefly to catch any second completion.
    func run(_ client: AppleHTTPClient, _ request: AppleHTTPRequest, limit: Double = 30) -> Outcome {
        var outcome = Outcome(result: nil, seconds: 0, completions: 0)
        let start = Self.monotonicSeconds()
        client.send(request) { result in
            outcome.result = result
            outcome.completions += 1
        }
        XCTAssertEqual(outcome.completions, 0, "completion must not run inside send")
        drive(until: { outcome.completions > 0 }, limit: limit)
        outcome.seconds = Self.monotonicSeconds() - start
        for _ in 0..<5 { event_base_loop(base, EVLOOP_NONBLOCK) }
        return outcome
    }

    /// Turns the loop until `done` or `limit` seconds (a guard against hanging tests, far
    /// beyond any deadline a test sets).
    func drive(until done: () -> Bool, limit: Double = 30) {
        let start = Self.monotonicSeconds()
        let tick = event_new(base, -1, Int16(EV_PERSIST), { _, _, _ in }, nil)
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        event_add(tick, &tv)
        while !done() && Self.monotonicSeconds() - start < limit {
            event_base_loop(base, EVLOOP_ONCE)
        }
        event_free(tick)
    }

    /// Events still registered on the loop (timers, sockets) — zero once a request is done.
    var registeredEvents: Int32 {
        event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED)
    }
}

func makeClient(
    _ loop: TestLoop, _ baseURL: String, caFile: String?, connectTimeout: Double = 5,
    totalTimeout: Double = 10, maxBodyBytes: Int = 1 << 20
) throws -> AppleHTTPClient {
    let configuration = AppleHTTPClient.Configuration(
        endpoint: try AppleEndpoint(baseURL: baseURL), caFile: caFile,
        connectTimeout: connectTimeout, totalTimeout: totalTimeout, maxBodyBytes: maxBodyBytes)
    return try AppleHTTPClient(base: loop.base, configuration: configuration)
}

extension AppleHTTPResult {
    var response: AppleHTTPResponse? {
        if case .response(let response) = self { return response }
        return nil
    }

    var failure: AppleHTTPFailure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
