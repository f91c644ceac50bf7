import Foundation
import Glibc
import XCTest

@testable import SidecarProxy

/// One request model, two codecs, end to end in process: each request below goes once over
/// HTTP/1.1 and once as an HTTP/2 stream through the real connections, and must get the same
/// decision, reach the upstream (or not) as the same bytes, and leave the same access line —
/// but for what differs by nature (time, ids, the protocol field). The requests are the
/// readings that walked around rules before: `%2F`, `//`, a capital letter, `;params`,
/// trailing dots, dot segments, forged identity and forwarding fields.
final class CodecDifferentialInProcessTests: XCTestCase {
    typealias Inbox = ConnectionHarness.Inbox

    /// (method, target, extra fields beside Host); each written by both codecs.
    private static let requests: [(String, String, [(String, String)])] = [
        ("GET", "/a?x=1", []),
        ("GET", "/admin/x", []),
        ("GET", "/ADMIN/x", []),
        ("GET", "/admin%2Fx", []),
        ("GET", "//admin/x", []),
        ("GET", "/admin;p=1/x", []),
        ("GET", "/admin./x", []),
        ("GET", "/a/../admin/x", []),
        ("GET", "/%61dmin/x", []),
        ("HEAD", "/a", []),
        ("DELETE", "/reports/7", []),
        ("GET", "/a", [("x-auth-user-id", "evil"), ("x-forwarded-for", "203.0.113.9"), ("accept", "text/html")]),
        ("GET", "/a", [("cookie", "a=1"), ("user-agent", "differential/1.0")]),
        ("GET", "/a%00b", []),
        ("GET", "/a/%2e%2e/admin", []),
    ]

    private struct Outcome {
        var upstreamHead: String?
        var accessLine: [String: String]
    }

    func testEveryRequestGetsTheSameDecisionForwardedHeadAndAccessLineOverBothCodecs() throws {
        let harness = try ConnectionHarness(yaml: "rules:\n  - path: /admin/**\n    deny: true\n")
        var upstreams: [Inbox] = []
        let (h2FD, _) = harness.connect()
        defer { close(h2FD) }
        let h2 = Inbox(h2FD)
        ConnectionHarness.send(h2FD, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + H2Frames.frame(type: 0x4, flags: 0, stream: 0, []))
        harness.run { !harness.http2.isEmpty }
        var stream: UInt32 = 1
        var forwarded = 0
        for (method, target, fields) in Self.requests {
            let (h1FD, _) = harness.connect()
            defer { close(h1FD) }
            var text = "\(method) \(target) HTTP/1.1\r\nHost: app.example\r\n"
            for (name, value) in fields { text += "\(name): \(value)\r\n" }
            let overH1 = exchange(harness, &upstreams) { ConnectionHarness.send(h1FD, text + "\r\n") }

            let block = [(":method", method), (":scheme", "http"), (":path", target), (":authority", "app.example")] + fields
            let overH2 = exchange(harness, &upstreams) {
                ConnectionHarness.send(h2FD, H2Frames.frame(type: 0x1, flags: 0x5, stream: stream, H2Frames.literalBlock(block)))
            }
            stream += 2
            h2.read().clear()

            let what = "\(method) \(target) \(fields)"
            XCTAssertEqual(overH1.accessLine, overH2.accessLine, what)
            XCTAssertEqual(overH1.upstreamHead, overH2.upstreamHead, what)
            XCTAssertNotNil(overH1.accessLine["status"], what)
            if overH1.upstreamHead != nil { forwarded += 1 }
        }
        // The test of the test: both kinds of decision were made.
        XCTAssertGreaterThan(forwarded, 3)
        XCTAssertLessThan(forwarded, Self.requests.count)
    }

    /// Sends one request with `send`, plays the upstream (200, "ok") if the request reaches
    /// it, and returns what the upstream got and the request's access line, without the
    /// fields that differ by nature.
    private func exchange(_ harness: ConnectionHarness, _ upstreams: inout [Inbox], send: () -> Void) -> Outcome {
        let linesBefore = accessLines(harness).count
        send()
        var head: String?
        var answered: Inbox?
        var accepted: [Inbox] = []
        let known = upstreams
        harness.run {
            while let fd = harness.acceptUpstream() { accepted.append(Inbox(fd)) }
            if answered == nil, let inbox = (known + accepted).first(where: { $0.read().text.contains("\r\n\r\n") }) {
                head = inbox.text
                inbox.clear()
                ConnectionHarness.send(inbox.fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                answered = inbox
            }
            return self.accessLines(harness).count > linesBefore
        }
        upstreams += accepted
        var line = accessLines(harness).last ?? [:]
        for varying in ["ts", "time", "request_id", "trace_id", "duration_ms", "upstream_ms", "protocol"] {
            line.removeValue(forKey: varying)
        }
        return Outcome(upstreamHead: head.map(Self.withoutIDs), accessLine: line)
    }

    private func accessLines(_ harness: ConnectionHarness) -> [[String: String]] {
        harness.logLines().compactMap { text in
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  object["msg"] as? String == "request" || object["message"] as? String == "request"
            else { return nil }
            return object.mapValues { "\($0)" }
        }
    }

    /// The upstream's head without the fields that carry this request's own ids, its fields
    /// in the order of their names: fields of different names mean the same in any order
    /// (RFC 9110 §5.3), and the HTTP/2 codec joins cookie crumbs into one field after the
    /// others (RFC 9113 §8.2.3). Fields of one name keep their order (a stable sort).
    private static func withoutIDs(_ head: String) -> String {
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
            .filter { line in !["x-request-id:", "traceparent:", "tracestate:"].contains { line.lowercased().hasPrefix($0) } }
        guard lines.count > 1 else { return lines.joined(separator: "\r\n") }
        let requestLine = lines.removeFirst()
        let fields = lines.filter { !$0.isEmpty }.enumerated().sorted { a, b in
            let (x, y) = (a.element.prefix { $0 != ":" }.lowercased(), b.element.prefix { $0 != ":" }.lowercased())
            return x != y ? x < y : a.offset < b.offset
        }.map(\.element)
        return ([requestLine] + fields).joined(separator: "\r\n")
    }
}
