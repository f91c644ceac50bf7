import Glibc
import SidecarHTTP
import SidecarHTTP2
import XCTest

@testable import SidecarProxy

/// A stream's exchange is kept for a later stream once it answered its own in full, and
/// `begin` makes it that stream's: every per-stream field must come back to its start, or a
/// value of one stream (its framing, a body not acknowledged, its trailers, a flag a queue
/// tests) would reach the next one's.
final class H2StreamExchangeTests: XCTestCase {
    /// The fields `H2StreamExchange.begin` sets. A field added to `H2StreamExchange` must be
    /// set there and listed here (and given a stream's value in `testBeginForgetsTheEarlierStream`).
    static let beginFields = [
        "id", "client", "chunkedRequest", "isHead", "requestEnded", "unacknowledged", "deliveryPending",
        "outputReady", "response", "requestTrailers", "responseTrailers", "bodyDeferred", "exchangeClosed",
        "streamClosed", "request",
    ]

    private static func outcome(_ text: String) throws -> H2RequestHead.Outcome {
        .request(try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8))))
    }

    func testEveryFieldIsOneBeginKnows() throws {
        let harness = try ConnectionHarness()
        let (clientFD, connection) = harness.connect()
        defer { close(clientFD) }
        let exchange = H2StreamExchange(
            id: 1, client: connection, request: try Self.outcome("GET / HTTP/1.1\r\nHost: h\r\n\r\n"), requestEnded: true)
        XCTAssertEqual(Mirror(reflecting: exchange).children.compactMap(\.label), Self.beginFields)
    }

    func testBeginForgetsTheEarlierStream() throws {
        let harness = try ConnectionHarness()
        let (clientFD, connection) = harness.connect()
        defer { close(clientFD) }
        let post = "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        let exchange = H2StreamExchange(id: 1, client: connection, request: try Self.outcome(post), requestEnded: false)
        XCTAssertTrue(exchange.chunkedRequest)
        exchange.unacknowledged = 7
        exchange.deliveryPending = true
        exchange.outputReady = true
        exchange.response = .body(complete: true)
        exchange.requestTrailers = Array("x-t: 1\r\n".utf8)
        let trailers = H2FieldList()
        exchange.responseTrailers = trailers
        exchange.bodyDeferred = true
        exchange.exchangeClosed = true
        exchange.streamClosed = true
        exchange.requestEnded = true

        let get = "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
        exchange.begin(id: 3, request: try Self.outcome(get), requestEnded: true)
        let fresh = H2StreamExchange(id: 3, client: connection, request: try Self.outcome(get), requestEnded: true)

        let begun = Mirror(reflecting: exchange).children.map { String(describing: $0.value) }
        let expected = Mirror(reflecting: fresh).children.map { String(describing: $0.value) }
        for (index, field) in Self.beginFields.enumerated() where field != "request" {
            XCTAssertEqual(begun[index], expected[index], field)
        }
        guard case .request(let head) = exchange.takeRequest() else { return XCTFail("the new stream's head") }
        XCTAssertEqual(head.method, .get)
        XCTAssertNil(exchange.takeRequest(), "taken once")
    }
}
