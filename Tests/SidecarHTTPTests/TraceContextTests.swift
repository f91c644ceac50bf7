import SidecarHTTP
import XCTest

final class TraceContextTests: XCTestCase {
    private let traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    private let parentId = "00f067aa0ba902b7"

    private func parse(_ text: String) -> TraceParent? {
        Array(text.utf8).withUnsafeBytes { TraceParent.parse($0) }
    }

    /// Nil (the caller fails the case) when the fixture is not a complete, valid head.
    private func head(_ fields: String) -> HTTPRequestHead? {
        guard case .success(let head?) = parseRequest(crlf("GET / HTTP/1.1\nHost: a\n" + fields + "\n")) else {
            return nil
        }
        return head
    }

    private func traceparent(_ trace: TraceContext) -> String {
        var out = [UInt8](repeating: 0, count: TraceContext.traceparentLength)
        out.withUnsafeMutableBytes { trace.writeTraceparent(to: $0.baseAddress!) }
        return String(decoding: out, as: UTF8.self)
    }

    func testValidTraceparentsParse() {
        let cases: [(String, UInt64, UInt64, UInt64, UInt8)] = [
            ("00-\(traceId)-\(parentId)-01", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736, 0x00f0_67aa_0ba9_02b7, 1),
            ("00-\(traceId)-\(parentId)-00", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736, 0x00f0_67aa_0ba9_02b7, 0),
            // Version 00: only the sampled flag, the one bit level 1 defines.
            ("00-\(traceId)-\(parentId)-ff", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736, 0x00f0_67aa_0ba9_02b7, 1),
            ("00-\(traceId)-\(parentId)-02", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736, 0x00f0_67aa_0ba9_02b7, 0),
            // Only one half of an id zero is still an id.
            ("00-00000000000000000000000000000001-0000000000000001-01", 0, 1, 1, 1),
            // A higher version: its first four fields, and only the sampled flag.
            ("01-\(traceId)-\(parentId)-03", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736, 0x00f0_67aa_0ba9_02b7, 1),
            ("cc-\(traceId)-\(parentId)-02-what-comes-next", 0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736,
             0x00f0_67aa_0ba9_02b7, 0),
        ]
        for (text, high, low, parent, flags) in cases {
            XCTAssertEqual(
                parse(text), TraceParent(traceIdHigh: high, traceIdLow: low, parentId: parent, flags: flags), text)
        }
    }

    func testMalformedTraceparentsAreRefused() {
        let refused = [
            "",
            "00",
            "00-\(traceId.uppercased())-\(parentId)-01",  // upper-case hex
            "00-\(traceId)-00F067AA0BA902B7-01",
            "00-\(traceId)-\(parentId)-0A",
            "0A-\(traceId)-\(parentId)-01",
            "00-\(traceId.dropLast())-\(parentId)-01",  // wrong lengths
            "00-\(traceId)0-\(parentId)-01",
            "00-\(traceId)-\(parentId.dropLast())-01",
            "00-\(traceId)-\(parentId)0-01",
            "00-\(traceId)-\(parentId)-1",
            "00-\(traceId)-\(parentId)-011",
            "0-0\(traceId)-\(parentId)-01",
            "00-00000000000000000000000000000000-\(parentId)-01",  // all-zero ids
            "00-\(traceId)-0000000000000000-01",
            "ff-\(traceId)-\(parentId)-01",  // version ff is invalid by definition
            "00-\(traceId)-\(parentId)-01-extra",  // version 00 has exactly four fields
            "00-\(traceId)-\(parentId)-01-",
            "01-\(traceId)-\(parentId)-01extra",  // a later version's next field starts with a dash
            " 00-\(traceId)-\(parentId)-01",  // whitespace
            "00-\(traceId)-\(parentId)-01 ",
            "00-\(traceId) -\(parentId)-01",
            "00 \(traceId)-\(parentId)-01",
            "00_\(traceId)_\(parentId)_01",
            "00-\(traceId)-\(parentId)-0g",
            "00-4bf92f35+7b34da6a3ce929d0e0e4736-\(parentId)-01",
        ]
        for text in refused { XCTAssertNil(parse(text), text) }
    }

    func testTraceparentIsWrittenWithTheSidecarsSpan() throws {
        let parent = try XCTUnwrap(parse("00-\(traceId)-\(parentId)-00"))
        let continued = TraceContext.continuing(parent, spanId: 0x0123_4567_89ab_cdef, tracestate: true)
        XCTAssertEqual(traceparent(continued), "00-\(traceId)-0123456789abcdef-00")
        XCTAssertTrue(continued.continued)
        XCTAssertTrue(continued.forwardsTracestate)
        XCTAssertEqual(continued.parentSpanId, parent.parentId, "the client's span: the parent of the sidecar's")
        XCTAssertFalse(continued.isSampled, "the client's decision")

        let started = TraceContext.starting(traceIdHigh: 0xfedc_ba98_7654_3210, traceIdLow: 0xa, spanId: 0xffff_ffff_ffff_ffff)
        XCTAssertEqual(traceparent(started), "00-fedcba9876543210000000000000000a-ffffffffffffffff-01")
        XCTAssertFalse(started.continued)
        XCTAssertFalse(started.forwardsTracestate)
        XCTAssertTrue(started.isSet)
        XCTAssertTrue(started.isSampled)
        XCTAssertEqual(started.parentSpanId, 0, "a trace started here has no parent span")
        XCTAssertFalse(TraceContext().isSet)
        let unsampled = TraceContext.starting(traceIdHigh: 1, traceIdLow: 2, spanId: 3, sampled: false)
        XCTAssertEqual(traceparent(unsampled), "00-00000000000000010000000000000002-0000000000000003-00",
                       "the upstream is told the trace is not sampled")

        var field = [UInt8](repeating: 0, count: TraceContext.traceparentFieldLength)
        field.withUnsafeMutableBytes { started.writeTraceparentField(to: $0.baseAddress!) }
        XCTAssertEqual(
            String(decoding: field, as: UTF8.self),
            "\r\ntraceparent: 00-fedcba9876543210000000000000000a-ffffffffffffffff-01")
    }

    func testHexDigitsMatchTheOneByOneFormatting() {
        var seed: UInt64 = 0x9e37_79b9_7f4a_7c15
        for _ in 0..<2000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            for value in [seed, seed & 0xffff_ffff, 0, 0xffff_ffff, 0x0a0a_0a0a, 0x9999_9999] {
                var digits = Hex16.digits(value)
                let text = withUnsafeBytes(of: &digits) { String(decoding: $0, as: UTF8.self) }
                let expected = String(value & 0xffff_ffff, radix: 16)
                XCTAssertEqual(text, String(repeating: "0", count: 8 - expected.count) + expected)
            }
        }
    }

    func testIncomingTraceFromAHead() {
        let valid = "traceparent: 00-\(traceId)-\(parentId)-01\n"
        let parent = parse("00-\(traceId)-\(parentId)-01")
        let cases: [(String, IncomingTrace)] = [
            ("", IncomingTrace()),
            (valid, IncomingTrace(parent: parent)),
            (valid + "tracestate: a=1\n", IncomingTrace(parent: parent, tracestateFits: true)),
            ("TraceState: a=1\nTRACEPARENT: 00-\(traceId)-\(parentId)-01\ntracestate: b=2\n",
             IncomingTrace(parent: parent, tracestateFits: true)),
            (valid + "tracestate:\n", IncomingTrace(parent: parent)),
            // At most 512 bytes, counted with the commas that join the fields.
            // (A member's value is at most 256 characters: two members make 512.)
            (valid + "tracestate: a=\(String(repeating: "x", count: 254)),b=\(String(repeating: "x", count: 253))\n",
             IncomingTrace(parent: parent, tracestateFits: true)),
            (valid + "tracestate: a=\(String(repeating: "x", count: 254)),b=\(String(repeating: "x", count: 254))\n",
             IncomingTrace(parent: parent)),
            (valid + "tracestate: a=\(String(repeating: "x", count: 254))\ntracestate: b=\(String(repeating: "x", count: 253))\n",
             IncomingTrace(parent: parent, tracestateFits: true)),
            (valid + "tracestate: a=\(String(repeating: "x", count: 254))\ntracestate: b=\(String(repeating: "x", count: 254))\n",
             IncomingTrace(parent: parent)),
            // Two traceparents: neither is continued.
            (valid + valid + "tracestate: a=1\n", IncomingTrace()),
            (valid + "traceparent: 00-\(traceId)-\(parentId)-00\n", IncomingTrace()),
            // Without a continued trace the tracestate goes nowhere.
            ("traceparent: garbage\ntracestate: a=1\n", IncomingTrace()),
            // Read as one list across fields: a key twice, 33 members.
            (valid + "tracestate: a=1\ntracestate: a=2\n", IncomingTrace(parent: parent)),
            (valid + "tracestate: " + (0..<20).map { "k\($0)=v" }.joined(separator: ",") + "\ntracestate: "
                + (20..<33).map { "k\($0)=v" }.joined(separator: ",") + "\n", IncomingTrace(parent: parent)),
            (valid + "tracestate: <script>,\"},{\"inj\":1\n", IncomingTrace(parent: parent)),
        ]
        for (fields, expected) in cases {
            guard let head = head(fields) else {
                XCTFail("the test head did not parse: \(fields)")
                continue
            }
            XCTAssertEqual(head.withView { $0.incomingTrace() }, expected, fields)
        }
    }

    private func tracestateIsValid(_ value: String) -> Bool {
        guard let head = head(value.isEmpty ? "" : "tracestate: \(value)\n") else { return false }
        return head.withView { $0.tracestateIsValid() }
    }

    func testTracestateFollowsTheLevel1Grammar() {
        let valid = [
            "a=1", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", "tenant@system=v", "1tenant@sys=x", "a*/-_9=x y <z>",
            "a=1, ,b=2", "a=1,\tb=2 ,c=3", "a=1,", (0..<32).map { "k\($0)=v" }.joined(separator: ","),
            String(repeating: "k", count: 256) + "=1", "a=" + String(repeating: "v", count: 256),
            String(repeating: "t", count: 241) + "@" + String(repeating: "s", count: 14) + "=1",
        ]
        for value in valid { XCTAssertTrue(tracestateIsValid(value), value) }
        let invalid = [
            "<script>,\"},{\"inj\":1", "a=1,a=2", (0..<33).map { "k\($0)=v" }.joined(separator: ","), "A=1", "1a=1",
            "a", "a=", "=1", "a=b=c", "t@1system=1", "t@systemidtoolong=1", "@s=1", "t@=1", "a=1;b=2",
            String(repeating: "k", count: 257) + "=1", "a=" + String(repeating: "v", count: 257),
            String(repeating: "t", count: 242) + "@s=1", "a@b@c=1", "a=\u{e9}",
        ]
        for value in invalid { XCTAssertFalse(tracestateIsValid(value), value) }
    }
}
