import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// An exchange is reset field by field: every field must come back to its start, or a value
/// of one request would reach the next one's access line or decisions.
final class ExchangeTests: XCTestCase {
    /// The fields `Exchange.reset()` resets. A field added to `Exchange` must be reset there
    /// and listed here (and set in `testResetReturnsEveryFieldToItsStart`).
    static let resetFields = [
        "request", "facts", "path", "requestId", "trace", "spans", "identity", "startedMs", "lastProgressMs",
        "requestRelay", "requestTrailers", "leg", "ruleHeaders", "site", "response", "responseRelay",
        "responseTrailers", "status", "bytesSent", "incomplete",
        "upstreamFailure", "clientSend", "actedForUser",
    ]

    func testEveryFieldIsOneTheResetKnows() {
        XCTAssertEqual(Mirror(reflecting: Exchange()).children.compactMap(\.label), Self.resetFields)
    }

    func testResetReturnsEveryFieldToItsStart() throws {
        let head = try XCTUnwrap(try HTTPRequestHead.parse(Array("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n".utf8)))
        var exchange = Exchange()
        exchange.request = head
        exchange.facts = RequestFacts(head)
        exchange.path = Array("/a".utf8)
        exchange.requestId = Array("id-1".utf8)
        exchange.trace = .starting(traceIdHigh: 1, traceIdLow: 2, spanId: 3)
        exchange.spans.start()
        exchange.spans.upstreamStarting()
        exchange.identity.stripCookie = true
        exchange.identity.otherCookies = Array("a=b".utf8)
        exchange.identity.setCookie = Array("s=1".utf8)
        exchange.identity.refusal = .expired
        exchange.startedMs = 1
        exchange.lastProgressMs = 3
        exchange.requestRelay = BodyRelay(framing: .contentLength(3), chunkOutput: false)
        exchange.requestTrailers = BodyRelay.TrailerSection(.hopByHopOnly)
        exchange.leg.index = 2
        exchange.leg.enterQueue(fresh: true, allowance: nil)
        exchange.ruleHeaders = 1
        exchange.site = 1
        let body = try XCTUnwrap(ByteQueue.allocate())
        defer { body.deallocate() }
        XCTAssertTrue(body.append([1, 2, 3]))
        exchange.leg.keepForReplay(3, from: body)
        XCTAssertEqual(exchange.leg.replayBody, [1, 2, 3])
        exchange.response = UpstreamResponse(keepAlive: true)
        exchange.responseRelay = BodyRelay(framing: .chunked, chunkOutput: true)
        exchange.responseTrailers = BodyRelay.TrailerSection(.hopByHopOnly)
        exchange.status = 200
        exchange.bytesSent = 10
        exchange.incomplete = .clientClosed
        exchange.upstreamFailure = true
        exchange.clientSend.start(written: 4, nowMs: 5)
        exchange.actedForUser = "user"
        let pathCapacity = exchange.path.capacity

        XCTAssertNotNil(exchange.reset(), "the request head comes back for reuse")

        let fresh = Mirror(reflecting: Exchange()).children.map { String(describing: $0.value) }
        let reset = Mirror(reflecting: exchange).children.map { String(describing: $0.value) }
        for (index, field) in Self.resetFields.enumerated() {
            XCTAssertEqual(reset[index], fresh[index], field)
        }
        XCTAssertEqual(exchange.path.capacity, pathCapacity, "the path keeps its capacity")
    }
}
