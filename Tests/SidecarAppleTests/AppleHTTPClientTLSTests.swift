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
        let client = try makeClient(
            loop, "https://localhost:\(servers.port("silent"))", caFile: servers.caFile,
            connectTimeout: 0.8, totalTimeout: 3)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/length"))
        XCTAssertEqual(outcome.result, .failure(.timeout))
        XCTAssertGreaterThan(outcome.seconds, 0.7)
        XCTAssertLessThan(outcome.seconds, 2)
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
        XCTAssertLessThan(outcome.seconds, 2)
        assertClean(loop, outcome)
    }

    func testRefusedConnectionFailsFast() throws {
        let loop = TestLoop()
        let port = try closedPort()
        let client = try makeClient(loop, "https://127.0.0.1:\(port)", caFile: nil)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/"))
        XCTAssertEqual(outcome.result, .failure(.connectFailed))
        XCTAssertLessThan(outcome.seconds, 1)
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
        let client = try makeClient(
            loop, "https://sidecar-test-host.invalid", caFile: nil, connectTimeout: 1.5, totalTimeout: 3)
        let outcome = loop.run(client, AppleHTTPRequest(method: .GET, path: "/auth/keys"))
        let failure = outcome.result?.failure
        XCTAssertTrue(failure == .dnsFailure || failure == .timeout, "got \(String(describing: failure))")
        XCTAssertLessThan(outcome.seconds, 2.5)
        XCTAssertEqual(outcome.completions, 1)
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
