import CEvent
import Foundation
import SidecarApple
import XCTest

/// Certificate and host verification, timeouts and connection failures against real servers.
final class AppleHTTPClientTLSTests: XCTestCase {
    private func assertClean(_ loop: TestLoop, _ outcome: TestLoop.Outcome, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(outcome.completions, 1, "exactly one completion", file: file, line: line)
        XCTAssertEqual(loop.registeredEvents, 0, "no timer or socket left on the loop", file: file, line: line)
    }

    func testTrustedCertificateForLocalhostSucceeds() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("good"))", caFile: servers.caFile)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result?.response?.status, 200)
        XCTAssertEqual(outcome.result?.response?.body, Array("exactly these bytes".utf8))
        assertClean(loop, outcome)
    }

    func testIPAddressHostIsVerifiedAgainstIPSubjectAltName() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let good = try makeClient(loop, "https://127.0.0.1:\(servers.port("good"))", caFile: servers.caFile)
        XCTAssertEqual(loop.run(good, AppleHTTPRequest(method: .GET, path: "/length")).result?.response?.status, 200)
        // other.example's certificate carries no IP address: X509_V_ERR_IP_ADDRESS_MISMATCH (64).
        let other = try makeClient(loop, "https://127.0.0.1:\(servers.port("other"))", caFile: servers.caFile)
        let outcome = loop.run(other, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 64)))
        assertClean(loop, outcome)
    }

    func testCertificateForAnotherHostIsRefused() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("other"))", caFile: servers.caFile)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 62)))
        assertClean(loop, outcome)
    }

    func testCertificateFromUnknownCAIsRefused() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        // Without the test CA only the system store is trusted: unable to get local issuer (20).
        let client = try makeClient(loop, "https://localhost:\(servers.port("good"))", caFile: nil)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 20)))
        assertClean(loop, outcome)
    }

    func testSelfSignedCertificateIsRefused() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("selfsigned"))", caFile: servers.caFile)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 18)))
        assertClean(loop, outcome)
    }

    func testTLS11OnlyServerIsRefused() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("tls11"))", caFile: servers.caFile)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 0)))
        assertClean(loop, outcome)
    }

    func testPlainHTTPToLoopbackWorks() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "http://127.0.0.1:\(servers.port("plain"))", caFile: nil)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result?.response?.body, Array("exactly these bytes".utf8))
        assertClean(loop, outcome)
    }

    func testTLSToPlainHTTPServerFailsTheHandshake() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("plain"))", caFile: servers.caFile)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.tlsHandshakeFailed(verifyResult: 0)))
        assertClean(loop, outcome)
    }

    func testSilentServerTimesOutWithinTheDeadline() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        // The connect deadline (DNS, TCP and TLS handshake) is 0.8 s; the total one far away.
        let client = try makeClient(
            loop, "https://localhost:\(servers.port("silent"))", caFile: servers.caFile,
            connectTimeout: 0.8, totalTimeout: 10)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.timeout))
        // The deadline is a minimum (measured from before `send`); +3 s covers a loaded 2-core
        // machine and still tells the connect deadline from the total one.
        XCTAssertGreaterThanOrEqual(outcome.seconds, 0.8)
        XCTAssertLessThan(outcome.seconds, 0.8 + 3)
        assertClean(loop, outcome)
    }

    func testTotalTimeoutCoversTheResponse() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        // The plain listener of a silent peer: TCP connects at once, no byte ever comes back.
        let client = try makeClient(
            loop, "http://127.0.0.1:\(servers.port("silent"))", caFile: nil,
            connectTimeout: 5, totalTimeout: 1)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.timeout))
        // The total deadline (1 s) is a minimum; +3 s covers a loaded 2-core machine (the
        // connect deadline, 5 s, does not apply: TCP connects at once).
        XCTAssertGreaterThanOrEqual(outcome.seconds, 1)
        XCTAssertLessThan(outcome.seconds, 1 + 3)
        assertClean(loop, outcome)
    }

    func testRefusedConnectionFailsFast() throws {
        let loop = TestLoop()
        let port = try closedPort()
        let client = try makeClient(loop, "https://127.0.0.1:\(port)", caFile: nil)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/"))
        XCTAssertEqual(outcome.result, .failure(.connectFailed))
        // Refused at once: 3 s covers a loaded 2-core machine, short of the 5 s connect
        // deadline a hanging attempt would wait for.
        XCTAssertLessThan(outcome.seconds, 3)
        assertClean(loop, outcome)
    }

    func testLocalhostTriesEveryLoopbackAddress() throws {
        let loop = TestLoop()
        let port = try closedPort()
        let client = try makeClient(loop, "https://localhost:\(port)", caFile: nil)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/"))
        XCTAssertEqual(outcome.result, .failure(.connectFailed))
        assertClean(loop, outcome)
    }

    func testUnresolvableHostFailsWithinTheDeadline() throws {
        let loop = TestLoop()
        var client: AppleHTTPClient? = try makeClient(
            loop, "https://sidecar-test-host.invalid", caFile: nil, connectTimeout: 1.5, totalTimeout: 10)
        var failure: AppleHTTPFailure?
        var completions = 0
        let start = TestLoop.monotonicSeconds()
        client?.send(AppleHTTPRequest(method: .GET, path: "/auth/keys")) { result in
            failure = result.failure
            completions += 1
            client = nil  // the last reference goes away inside the completion
        }
        loop.drive(until: { completions > 0 })
        for _ in 0..<5 { event_base_loop(loop.base, EVLOOP_NONBLOCK) }
        XCTAssertTrue(failure == .dnsFailure || failure == .timeout, "got \(String(describing: failure))")
        // An answer or the 1.5 s connect deadline, +3 s for a loaded 2-core machine (still
        // short of the 10 s total deadline).
        XCTAssertLessThan(TestLoop.monotonicSeconds() - start, 1.5 + 3)
        XCTAssertEqual(completions, 1)
        XCTAssertNil(client)
        XCTAssertEqual(loop.registeredEvents, 0)
    }

    func testSilentNameServerIsCoveredByTheDeadline() throws {
        // A UDP socket that receives queries and never answers them.
        let dnsSocket = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(dnsSocket) }
        let port = try bindLoopback(dnsSocket)
        let resolvConf = FileManager.default.temporaryDirectory
            .appendingPathComponent("sidecar-resolv-\(getpid()).conf")
        try "nameserver 127.0.0.1:\(port)\n".write(to: resolvConf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: resolvConf) }

        let loop = TestLoop()
        var client: AppleHTTPClient? = try AppleHTTPClient(base: loop.base, configuration: .init(
            endpoint: AppleEndpoint(baseURL: "https://apple.sidecar.test"), connectTimeout: 0.5,
            totalTimeout: 10, resolvConfPath: resolvConf.path))
        let outcome = loop.run(try XCTUnwrap(client), AppleHTTPRequest(method: .GET, path: "/auth/keys"))
        XCTAssertEqual(outcome.result, .failure(.timeout))
        // The connect deadline (0.5 s) covers the lookup; it is a minimum (measured from
        // before `send`), +3 s for a loaded 2-core machine, short of the 10 s total deadline.
        XCTAssertGreaterThanOrEqual(outcome.seconds, 0.5)
        XCTAssertLessThan(outcome.seconds, 0.5 + 3)
        XCTAssertEqual(outcome.completions, 1)
        // The cancelled lookup is released with the resolver; nothing stays on the loop.
        client = nil
        XCTAssertEqual(loop.registeredEvents, 0)
    }

    func testMissingCAFileIsASetupError() throws {
        let loop = TestLoop()
        XCTAssertThrowsError(try makeClient(loop, "https://localhost:1", caFile: "/nonexistent/ca.pem")) { error in
            XCTAssertEqual(error as? AppleHTTPClient.SetupError, .caFileUnreadable("/nonexistent/ca.pem"))
        }
    }

    /// A loopback port with nothing listening on it.
    private func closedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return try bindLoopback(fd)
    }

    private func bindLoopback(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return UInt16(bigEndian: address.sin_port)
    }
}
