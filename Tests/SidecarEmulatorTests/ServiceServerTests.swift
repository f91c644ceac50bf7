import Foundation
import Glibc
import XCTest
import SidecarApple
import SidecarEvent

/// The generic service server under the emulator: framing, keep-alive, limits, TLS.
final class ServiceServerTests: XCTestCase {
    func testKeepAliveChunkedBodiesAndFramingRefusals() throws {
        let emulator = try EmulatorFixture()
        let fd = try RawHTTP.connect(emulator.address)
        defer { close(fd) }
        var pending: [UInt8] = []
        // Two pipelined requests on one connection, the second with a chunked JSON body.
        RawHTTP.send(fd, Array("GET /auth/keys HTTP/1.1\r\nHost: x\r\n\r\nPOST /emulator/faults HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"fau\r\n14\r\nlt\":\"invalid_grant\"}\r\n0\r\n\r\n".utf8))
        XCTAssertEqual(try RawHTTP.readResponse(fd, pending: &pending).status, 200)
        let second = try RawHTTP.readResponse(fd, pending: &pending)
        XCTAssertEqual(second.status, 200, second.text)
        XCTAssertEqual(second.json?.objectValue?["armed"], .array([.string("invalid_grant")]))

        for bad in ["POST /auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
                    "GET /auth/keys HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
                    "GET /auth/keys HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"] {
            let reply = try raw(emulator.address, bad)
            XCTAssertEqual(reply.status, 400, bad)
        }
        let big = try raw(emulator.address, "POST /auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
        XCTAssertEqual(big.status, 413)
        let head = try RawHTTP.request(emulator.address, "HEAD", "/auth/keys")
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
    }

    func testServesHTTPSWithACertificate() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("emulator-tls-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        guard run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                                       "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"]) == 0
        else { throw XCTSkip("openssl is not available") }
        let tls = try ServiceTLSContext(certificateFile: dir + "/cert.pem", keyFile: dir + "/key.pem")
        let running = try RunningEmulator.start(
            options: EmulatorOptions(issuer: "", teamID: "TEAM123456", clients: [EmulatorClient(id: "web", redirectURIs: ["https://a.example/cb"])],
                                     clientKeys: [:]),
            listen: try SocketAddress(parsing: "127.0.0.1:0"), tls: tls)
        defer { running.stop() }
        XCTAssertTrue(running.issuer.hasPrefix("https://127.0.0.1:"))
        let output = dir + "/keys.json"
        guard run("/usr/bin/curl", ["-sS", "--cacert", dir + "/cert.pem", "-o", output, running.issuer + "/auth/keys"]) == 0 else {
            return XCTFail("curl over TLS failed")
        }
        let keys = try String(contentsOfFile: output, encoding: .utf8)
        XCTAssertTrue(keys.contains("\"kty\":\"RSA\""), keys)
        XCTAssertThrowsError(try ServiceTLSContext(certificateFile: dir + "/cert.pem", keyFile: dir + "/missing.pem"))
    }

    private func raw(_ address: SocketAddress, _ text: String) throws -> HTTPReply {
        let fd = try RawHTTP.connect(address)
        defer { close(fd) }
        RawHTTP.send(fd, Array(text.utf8))
        var pending: [UInt8] = []
        return try RawHTTP.readResponse(fd, pending: &pending)
    }

    private func run(_ tool: String, _ arguments: [String]) -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: tool) else { return -1 }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
