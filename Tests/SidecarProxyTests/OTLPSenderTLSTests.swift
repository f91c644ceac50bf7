import CEvent
import COpenSSL
import Foundation
import Glibc
import SidecarEvent
import XCTest

@testable import SidecarConfig
@testable import SidecarProxy

/// Posts to an `https` collector: the certificate and host name verified like the sidecar's
/// other TLS clients, SNI sent, and every wait (the handshake too) under the post's deadline.
final class OTLPSenderTLSTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "otlp-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(atPath: directory) }
    }

    /// A self-signed certificate (its own CA) for `names`: `cert.pem` and `key.pem` under `prefix`.
    private func certificate(_ prefix: String, names: String) throws -> (cert: String, key: String) {
        let cert = "\(directory)/\(prefix)-cert.pem", key = "\(directory)/\(prefix)-key.pem"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                             "-subj", "/CN=collector", "-addext", "subjectAltName=\(names)", "-keyout", key, "-out", cert]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw SetupFailure("openssl is not available") }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SetupFailure("openssl could not make a certificate") }
        return (cert, key)
    }

    private func endpoint(_ host: String, _ port: UInt16) throws -> HTTPURL {
        try Parse.otlpEndpoint("https://\(host):\(port)").get()
    }

    private func post(_ endpoint: HTTPURL, caFile: String?, timeoutMs: Int64 = 2_000) throws -> OTLPSender.Outcome {
        let tls = try TLSClientContext(caFile: caFile)
        return Array(#"{"resourceSpans":[]}"#.utf8).withUnsafeBytes {
            OTLPSender(endpoint: endpoint, tls: tls, timeoutMs: timeoutMs).post($0)
        }
    }

    func testATrustedCollectorGetsThePostOverTLSWithSNI() throws {
        let files = try certificate("good", names: "DNS:localhost,IP:127.0.0.1")
        let server = try TLSCollector(cert: files.cert, key: files.key)
        XCTAssertEqual(try post(endpoint("localhost", server.port), caFile: files.cert), .accepted)
        let seen = server.finish()
        XCTAssertEqual(seen.serverName, "localhost")
        XCTAssertTrue(seen.request.hasPrefix("POST /v1/traces HTTP/1.1\r\nHost: localhost:\(server.port)\r\n"), seen.request)
        XCTAssertTrue(seen.request.hasSuffix(#"{"resourceSpans":[]}"#), seen.request)

        let byAddress = try TLSCollector(cert: files.cert, key: files.key)
        XCTAssertEqual(try post(endpoint("127.0.0.1", byAddress.port), caFile: files.cert), .accepted)
        XCTAssertNil(byAddress.finish().serverName, "no SNI for an address")
    }

    func testAnUntrustedCertificateFailsThePost() throws {
        let files = try certificate("self", names: "DNS:localhost,IP:127.0.0.1")
        let server = try TLSCollector(cert: files.cert, key: files.key)
        let outcome = try post(endpoint("127.0.0.1", server.port), caFile: nil)
        guard case .failed(let why) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertTrue(why.contains("not verified"), why)
        XCTAssertEqual(server.finish().request, "", "nothing is sent to a collector that did not verify")
    }

    func testACertificateForAnotherHostFailsThePost() throws {
        let files = try certificate("other", names: "DNS:other.example")
        let server = try TLSCollector(cert: files.cert, key: files.key)
        let outcome = try post(endpoint("127.0.0.1", server.port), caFile: files.cert)
        guard case .failed(let why) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertTrue(why.contains("not verified"), why)
        _ = server.finish()
    }

    /// A peer that accepts the connection and never answers the ClientHello.
    func testAHandshakeThatHangsEndsAtTheDeadline() throws {
        let listener = try TLSCollector.listen()
        defer { close(listener.fd) }
        let started = OTLPSender.monotonicMs()
        let outcome = try post(endpoint("127.0.0.1", listener.port), caFile: nil, timeoutMs: 300)
        let elapsed = OTLPSender.monotonicMs() - started
        guard case .failed(let why) = outcome else { return XCTFail("\(outcome)") }
        XCTAssertTrue(why.contains("timed out"), why)
        XCTAssertGreaterThanOrEqual(elapsed, 290)
        XCTAssertLessThan(elapsed, 1_500)
    }

    func testAnExporterCountsAnUnverifiedCollectorAsAFailure() throws {
        let files = try certificate("exporter", names: "IP:127.0.0.1")
        let server = try TLSCollector(cert: files.cert, key: files.key)
        let exporter = SpanExporter(workers: 1, version: "t", queueCapacity: 8)
        for _ in 0..<3 { exporter.queues[0].push(SpanRecord()) }
        try exporter.configure(endpoint: try endpoint("127.0.0.1", server.port))
        exporter.stop()
        XCTAssertEqual(exporter.failedBatchesTotal, 1)
        XCTAssertEqual(exporter.droppedTotal, 3)
        XCTAssertEqual(exporter.exportedTotal, 0)
        _ = server.finish()
    }

    func testAnUnreadableCAFileIsASetupError() throws {
        let bogus = directory + "/bogus.pem"
        try "not a certificate".write(toFile: bogus, atomically: true, encoding: .utf8)
        let exporter = SpanExporter(workers: 1, version: "t")
        XCTAssertThrowsError(try exporter.configure(endpoint: try endpoint("127.0.0.1", 4318), caFile: bogus)) { error in
            XCTAssertTrue("\(error)".contains("tracing.otlp_ca_file"), "\(error)")
        }
        // A plain endpoint needs no context: the file is not read.
        XCTAssertNoThrow(try exporter.configure(endpoint: try Parse.otlpEndpoint("http://127.0.0.1:4318").get(), caFile: bogus))
        try exporter.configure(endpoint: nil)
        exporter.stop()
    }
}

/// A one-connection HTTPS collector on a thread: accepts, handshakes (which may fail), reads
/// one request and answers 200.
private final class TLSCollector: @unchecked Sendable {
    struct Seen {
        var request = ""
        var serverName: String?
    }

    let port: UInt16
    private let fd: Int32
    private let ctx: OpaquePointer
    private let done = DispatchSemaphore(value: 0)
    private var seen = Seen()

    init(cert: String, key: String) throws {
        guard let ctx = SSL_CTX_new(TLS_server_method()),
              SSL_CTX_use_certificate_chain_file(ctx, cert) == 1,
              SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 else {
            throw SetupFailure("the test collector's TLS context could not be made")
        }
        self.ctx = ctx
        (fd, port) = try Self.listen()
        Thread.detachNewThread { [self] in serve() }
    }

    deinit { SSL_CTX_free(ctx) }

    /// What the collector saw, once its connection is over.
    func finish() -> Seen {
        done.wait()
        return seen
    }

    private func serve() {
        defer {
            close(fd)
            done.signal()
        }
        let connection = accept(fd, nil, nil)
        guard connection >= 0, let ssl = SSL_new(ctx) else { return }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        defer {
            SSL_free(ssl)
            close(connection)
        }
        SSL_set_fd(ssl, connection)
        guard SSL_accept(ssl) == 1 else { return }
        seen.serverName = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !Self.isComplete(received) {
            let count = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { break }
            received += chunk[..<Int(count)]
        }
        seen.request = String(decoding: received, as: UTF8.self)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        _ = answer.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        SSL_shutdown(ssl)
    }

    private static func isComplete(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n"),
              let field = text.range(of: "Content-Length: ", range: text.startIndex..<end.lowerBound) else { return false }
        let length = Int(text[field.upperBound...].prefix { $0.isNumber }) ?? 0
        return text.utf8.count - text.utf8.distance(from: text.startIndex, to: end.upperBound) >= length
    }

    static func listen() throws -> (fd: Int32, port: UInt16) { try TLSCollectorSocket.listen() }
}

/// A listening socket on 127.0.0.1 and its port (the test collectors').
enum TLSCollectorSocket {
    static func listen() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && Glibc.listen(fd, 4) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw SetupFailure("no listening socket")
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }
}

/// The test's own TLS collector or certificate could not be set up: a failure, never a skip,
/// so a test that could not test does not pass.
private struct SetupFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
