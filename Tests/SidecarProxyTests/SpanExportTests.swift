import CEvent
import Foundation
import Glibc
import SidecarHTTP
import XCTest

@testable import SidecarConfig
@testable import SidecarProxy

/// Spans as the exporter posts them (OTLP/HTTP JSON), the bounded queue between the workers
/// and the exporter, and the sampling of new traces.
final class SpanExportTests: XCTestCase {
    private func sampleSpans() -> [SpanRecord] {
        var trace = TraceContext.starting(traceIdHigh: 0x4bf9_2f35_77b3_4da6, traceIdLow: 0xa3ce_929d_0e0e_4736,
                                          spanId: 0x00f0_67aa_0ba9_02b7)
        trace.parentSpanId = 0x1122_3344_5566_7788
        var request = SpanRecord(.request, trace: trace, spanId: trace.spanId, parentId: trace.parentSpanId,
                                 startNs: 1_700_000_000_000_000_000, endNs: 1_700_000_000_002_000_000)
        request.method = .get
        request.status = 200
        var upstream = SpanRecord(.upstream, trace: trace, spanId: 0xabc, parentId: trace.spanId,
                                  startNs: 1_700_000_000_000_500_000, endNs: 1_700_000_000_001_500_000)
        upstream.method = .get
        upstream.failed = true
        var root = SpanRecord(.appleToken, trace: .starting(traceIdHigh: 1, traceIdLow: 2, spanId: 3), spanId: 4,
                              parentId: 0, startNs: 10, endNs: 5)
        root.method = .post
        root.status = 400
        var claim = SpanRecord(.storeClaim, trace: trace, spanId: 5, parentId: trace.spanId, startNs: 20, endNs: 30)
        claim.failed = true
        return [request, upstream, root, claim]
    }

    private func decode(_ spans: [SpanRecord]) throws -> [String: Any] {
        // A small buffer, so that encoding grows it.
        let body = JSONBuffer(capacity: 100)
        OTLPEncoder(version: "1.2.3-\"q\"").encode(spans[...], into: body)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.bytes)) as? [String: Any])
    }

    func testABatchIsAnExportTraceServiceRequest() throws {
        let json = try decode(sampleSpans())
        let resourceSpans = try XCTUnwrap(json["resourceSpans"] as? [[String: Any]])
        XCTAssertEqual(resourceSpans.count, 1)
        let resource = try XCTUnwrap(resourceSpans[0]["resource"] as? [String: Any])
        let resourceAttributes = try XCTUnwrap(resource["attributes"] as? [[String: Any]])
        XCTAssertEqual(resourceAttributes.first?["key"] as? String, "service.name")
        XCTAssertEqual((resourceAttributes.first?["value"] as? [String: String])?["stringValue"], "siwa-sidecar")
        XCTAssertEqual((resourceAttributes.last?["value"] as? [String: String])?["stringValue"], "1.2.3-\"q\"",
                       "a quote in the version is escaped")
        let scopeSpans = try XCTUnwrap(resourceSpans[0]["scopeSpans"] as? [[String: Any]])
        let spans = try XCTUnwrap(scopeSpans[0]["spans"] as? [[String: Any]])
        XCTAssertEqual(spans.count, 4)

        let request = spans[0]
        XCTAssertEqual(request["traceId"] as? String, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(request["spanId"] as? String, "00f067aa0ba902b7")
        XCTAssertEqual(request["parentSpanId"] as? String, "1122334455667788")
        XCTAssertEqual(request["name"] as? String, "GET")
        XCTAssertEqual(request["kind"] as? Int, 2)
        XCTAssertEqual(request["startTimeUnixNano"] as? String, "1700000000000000000")
        XCTAssertEqual(request["endTimeUnixNano"] as? String, "1700000000002000000")
        XCTAssertEqual(attributes(request), ["http.request.method": "GET", "http.response.status_code": "200"])
        XCTAssertEqual(request["status"] as? [String: Int], ["code": 0])

        let upstream = spans[1]
        XCTAssertEqual(upstream["spanId"] as? String, "0000000000000abc")
        XCTAssertEqual(upstream["parentSpanId"] as? String, "00f067aa0ba902b7")
        XCTAssertEqual(upstream["name"] as? String, "upstream")
        XCTAssertEqual(upstream["kind"] as? Int, 3)
        XCTAssertEqual(attributes(upstream), ["http.request.method": "GET", "error.type": "no_response"])
        XCTAssertEqual(upstream["status"] as? [String: Int], ["code": 2])

        let root = spans[2]
        XCTAssertNil(root["parentSpanId"], "a root span has no parent")
        XCTAssertEqual(root["traceId"] as? String, "00000000000000010000000000000002")
        XCTAssertEqual(root["name"] as? String, "apple token exchange")
        XCTAssertEqual(root["endTimeUnixNano"] as? String, "10", "a span never ends before it starts")
        XCTAssertEqual(root["status"] as? [String: Int], ["code": 2], "a 4xx answer to the sidecar's own call")

        let claim = spans[3]
        XCTAssertEqual(claim["name"] as? String, "store claim")
        XCTAssertEqual(claim["kind"] as? Int, 3)
        XCTAssertEqual(attributes(claim), ["db.operation.name": "claim", "error.type": "store_unavailable"])
        XCTAssertEqual(claim["status"] as? [String: Int], ["code": 2])
    }

    func testEveryCallOfARequestIsAClientSpanWithItsNameAndAttributes() throws {
        let trace = TraceContext.starting(traceIdHigh: 1, traceIdLow: 2, spanId: 3)
        let expected: [(SpanName, String, [String: String])] = [
            (.appleRevoke, "apple token revoke", ["http.request.method": "POST", "http.response.status_code": "200"]),
            (.appleRefresh, "apple token refresh", ["http.request.method": "POST", "http.response.status_code": "200"]),
            (.storeRevoke, "store revoke", ["db.operation.name": "revoke"]),
            (.storeEnqueue, "store enqueue", ["db.operation.name": "enqueue"]),
            (.storeAck, "store ack", ["db.operation.name": "ack"]),
        ]
        let records = expected.enumerated().map { index, entry in
            var span = SpanRecord(entry.0, trace: trace, spanId: UInt64(10 + index), parentId: 3, startNs: 1, endNs: 2)
            if entry.0 == .appleRevoke || entry.0 == .appleRefresh {
                span.method = .post
                span.status = 200
            }
            return span
        }
        let json = try decode(records)
        let spans = try XCTUnwrap(((json["resourceSpans"] as? [[String: Any]])?[0]["scopeSpans"] as? [[String: Any]])?[0]["spans"]
            as? [[String: Any]])
        XCTAssertEqual(spans.count, expected.count)
        for (span, entry) in zip(spans, expected) {
            XCTAssertEqual(span["name"] as? String, entry.1)
            XCTAssertEqual(span["kind"] as? Int, 3)
            XCTAssertEqual(span["parentSpanId"] as? String, "0000000000000003")
            XCTAssertEqual(attributes(span), entry.2, entry.1)
            XCTAssertEqual(span["status"] as? [String: Int], ["code": 0])
        }
        var failed = SpanRecord(.storeRevoke, trace: trace, spanId: 9, parentId: 3, startNs: 1, endNs: 2)
        failed.failed = true
        let one = try decode([failed])
        let span = try XCTUnwrap(((one["resourceSpans"] as? [[String: Any]])?[0]["scopeSpans"] as? [[String: Any]])?[0]["spans"]
            as? [[String: Any]])[0]
        XCTAssertEqual(attributes(span), ["db.operation.name": "revoke", "error.type": "store_unavailable"])
        XCTAssertEqual(span["status"] as? [String: Int], ["code": 2])
    }

    func testAnEmptyBatchAndAnUnknownMethodStillDecode() throws {
        let empty = try decode([])
        let scope = try XCTUnwrap(((empty["resourceSpans"] as? [[String: Any]])?[0]["scopeSpans"] as? [[String: Any]])?[0])
        XCTAssertEqual((scope["spans"] as? [Any])?.count, 0)
        var span = SpanRecord()
        span.method = .other
        let one = try decode([span])
        let spans = try XCTUnwrap(((one["resourceSpans"] as? [[String: Any]])?[0]["scopeSpans"] as? [[String: Any]])?[0]["spans"]
            as? [[String: Any]])
        XCTAssertEqual(spans[0]["name"] as? String, "HTTP")
        XCTAssertEqual(attributes(spans[0])["http.request.method"], "_OTHER")
    }

    func testControlCharactersAreEscaped() {
        let out = JSONBuffer()
        OTLPEncoder.string("a\u{1}\n\\b", into: out)
        XCTAssertEqual(String(decoding: out.bytes, as: UTF8.self), #""a\u0001\u000a\\b""#)
        out.removeAll()
        OTLPEncoder.decimal(0, into: out)
        OTLPEncoder.decimal(UInt64.max, into: out)
        XCTAssertEqual(String(decoding: out.bytes, as: UTF8.self), "018446744073709551615")
        for value: UInt64 in [7, 10, 99, 100, 503, 1_000, 1_700_000_000_123_456_789] {
            out.removeAll()
            OTLPEncoder.decimal(value, into: out)
            XCTAssertEqual(String(decoding: out.bytes, as: UTF8.self), String(value))
        }
    }

    private func attributes(_ span: [String: Any]) -> [String: String] {
        var out: [String: String] = [:]
        for attribute in span["attributes"] as? [[String: Any]] ?? [] {
            let value = attribute["value"] as? [String: String]
            out[attribute["key"] as? String ?? ""] = value?.values.first
        }
        return out
    }

    // MARK: the queue

    func testTheQueueIsBoundedAndCountsWhatItDrops() {
        let queue = SpanQueue(capacity: 4)
        for id in 1...6 {
            var span = SpanRecord()
            span.spanId = UInt64(id)
            queue.push(span)
        }
        XCTAssertEqual(queue.count, 4)
        var out: [SpanRecord] = []
        XCTAssertEqual(queue.drain(into: &out, limit: 3), 2, "the two that found it full")
        XCTAssertEqual(out.map(\.spanId), [1, 2, 3], "the oldest first")
        XCTAssertEqual(queue.drain(into: &out, limit: 10), 0, "drops are reported once")
        XCTAssertEqual(out.map(\.spanId), [1, 2, 3, 4])
        // Around the end of the ring and back.
        var a = SpanRecord(), b = SpanRecord()
        a.spanId = 7
        b.spanId = 8
        for _ in 0..<3 { queue.push(a, b) }
        XCTAssertEqual(queue.count, 4)
        out.removeAll()
        XCTAssertEqual(queue.drain(into: &out, limit: 10), 2)
        XCTAssertEqual(out.map(\.spanId), [7, 8, 7, 8])
        XCTAssertEqual(queue.count, 0)
    }

    func testAnExporterWithoutACollectorDropsAndCounts() throws {
        let endpoint = try Parse.otlpEndpoint("http://127.0.0.1:\(Self.closedPort())").get()
        let exporter = SpanExporter(workers: 2, version: "t", queueCapacity: 8)
        for _ in 0..<10 { exporter.queues[1].push(SpanRecord()) }
        try exporter.configure(endpoint: endpoint)
        exporter.stop()
        XCTAssertEqual(exporter.droppedTotal, 10, "two dropped by the full queue, eight by the refused batch")
        XCTAssertEqual(exporter.exportedTotal, 0)
        XCTAssertEqual(exporter.failedBatchesTotal, 1)
        XCTAssertTrue(exporter.renderMetrics().contains("sidecar_trace_spans_dropped_total 10\n"))
    }

    /// A port nothing listens on: bound, then closed.
    private static func closedPort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(fd, $0, length)
                _ = getsockname(fd, $0, &length)
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    // MARK: sampling

    func testTheRatioDecidesNewTracesByTheirIds() {
        XCTAssertEqual(TraceContext.samplingThreshold(ratio: 0), 0)
        XCTAssertEqual(TraceContext.samplingThreshold(ratio: 1), .max)
        var ids = TraceIDGenerator()
        XCTAssertFalse((0..<1000).contains { _ in ids.startTrace(sampling: 0).isSampled }, "ratio 0: none (ids are never 0)")
        XCTAssertTrue((0..<1000).allSatisfy { _ in ids.startTrace(sampling: .max).isSampled })
        let quarter = TraceContext.samplingThreshold(ratio: 0.25)
        let sampled = (0..<20_000).filter { _ in ids.startTrace(sampling: quarter).isSampled }.count
        XCTAssertEqual(Double(sampled) / 20_000, 0.25, accuracy: 0.02)
        XCTAssertEqual(ids.startTrace(sampling: 0).flags, 0, "the forwarded traceparent says not sampled")
    }
}
