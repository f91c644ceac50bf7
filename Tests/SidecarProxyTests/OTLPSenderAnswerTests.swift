import Foundation
import Glibc
import XCTest

@testable import SidecarConfig
@testable import SidecarProxy

/// The collector's answers as the sender reads them: the status, and whether the connection
/// carries the next post (a plain collector on this machine answering from a script).
final class OTLPSenderAnswerTests: XCTestCase {
    private func sender(_ collector: ScriptedCollector) throws -> OTLPSender {
        OTLPSender(endpoint: try Parse.otlpEndpoint("http://127.0.0.1:\(collector.port)").get(), timeoutMs: 2_000)
    }

    private func post(_ sender: OTLPSender) -> OTLPSender.Outcome {
        Array(#"{"resourceSpans":[]}"#.utf8).withUnsafeBytes { sender.post($0) }
    }

    func testAnAnswerWithALengthKeepsTheConnectionForTheNextPost() throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        let collector = try ScriptedCollector([ok, ok, "HTTP/1.1 204 No Content\r\n\r\n", ok])
        let sender = try sender(collector)
        for _ in 0..<4 { XCTAssertEqual(post(sender), .accepted) }
        XCTAssertEqual(sender.connectionsOpened, 1)
        XCTAssertEqual(collector.finish(), 1)
    }

    func testAnAnswerThatClosesOrIsNotFramedByALengthEndsTheConnection() throws {
        let collector = try ScriptedCollector([
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "HTTP/1.0 503 Busy\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        ])
        let sender = try sender(collector)
        XCTAssertEqual(post(sender), .accepted)
        XCTAssertEqual(post(sender), .rejected(status: 503))
        XCTAssertEqual(post(sender), .accepted)
        XCTAssertEqual(post(sender), .accepted)
        XCTAssertEqual(sender.connectionsOpened, 4)
    }

    func testAnAnswerThatIsNotHTTP11OrHTTP10Fails() throws {
        for answer in ["HTTP/2 200\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "SSH-2.0-OpenSSH\r\n\r\n"] {
            let collector = try ScriptedCollector([answer])
            XCTAssertEqual(post(try sender(collector)), .failed("answer is not HTTP"), answer)
        }
    }

    /// A kept connection the collector closed without saying so: the next post goes over a new
    /// one, and arrives.
    func testAConnectionTheCollectorClosedIsReplacedWithoutLosingThePost() throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
        let collector = try ScriptedCollector([ok, ok], closeAfterEach: true)
        let sender = try sender(collector)
        XCTAssertEqual(post(sender), .accepted)
        XCTAssertEqual(post(sender), .accepted)
        XCTAssertEqual(sender.connectionsOpened, 2)
        XCTAssertEqual(collector.finish(), 2)
    }
}

/// Answers each request it reads (head and `Content-Length` body) with the next of `answers`,
/// on as many connections as the client opens, until the script ends. `closeAfterEach`: closes
/// a connection after each answer, whatever the answer said.
private final class ScriptedCollector: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let done = DispatchSemaphore(value: 0)
    private var answers: [String]
    private let closeAfterEach: Bool
    private var accepted = 0

    init(_ answers: [String], closeAfterEach: Bool = false) throws {
        self.answers = answers
        self.closeAfterEach = closeAfterEach
        (fd, port) = try TLSCollectorSocket.listen()
        Thread.detachNewThread { [self] in serve() }
    }

    /// The connections accepted, once the script is over.
    func finish() -> Int {
        done.wait()
        return accepted
    }

    private func serve() {
        defer {
            close(fd)
            done.signal()
        }
        while !answers.isEmpty {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            accepted += 1
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !answers.isEmpty {
                while !Self.hasRequest(received) {
                    let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { break }
                    received += chunk[..<count]
                }
                guard let length = Self.hasRequestLength(received) else { break }  // the client closed
                received.removeFirst(length)
                let answer = Array(answers.removeFirst().utf8)
                _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                let text = String(decoding: answer, as: UTF8.self)
                if closeAfterEach || text.contains("Connection: close") || text.hasPrefix("HTTP/1.0")
                    || text.contains("chunked") || !text.hasPrefix("HTTP/1.1 2")
                {
                    break
                }
            }
            close(connection)
        }
    }

    private static func hasRequest(_ bytes: [UInt8]) -> Bool { hasRequestLength(bytes) != nil }

    /// The length of the first whole request in `bytes`, if one is there.
    private static func hasRequestLength(_ bytes: [UInt8]) -> Int? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n"),
              let field = text.range(of: "Content-Length: ", range: text.startIndex..<end.lowerBound) else { return nil }
        let length = Int(text[field.upperBound...].prefix { $0.isNumber }) ?? 0
        let headLength = text.utf8.distance(from: text.startIndex, to: end.upperBound)
        return bytes.count - headLength >= length ? headLength + length : nil
    }
}
