import Glibc
import XCTest

@testable import SidecarProxy

/// `ClientConnection` driven in process (`ConnectionHarness`): the test is the client and the
/// upstream, and steps the loop between them.
final class ClientConnectionInProcessTests: XCTestCase {
    typealias Inbox = ConnectionHarness.Inbox

    func testARequestIsForwardedRewrittenAndTheUpstreamConnectionReused() throws {
        let harness = try ConnectionHarness()
        let (clientFD, connection) = harness.connect()
        defer { close(clientFD) }
        let client = Inbox(clientFD)
        ConnectionHarness.send(clientFD, "GET /a?x=1 HTTP/1.1\r\nHost: app.example\r\nX-Auth-Email: forged@example.com\r\n\r\n")
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        let upstream = Inbox(upstreamFD!)
        defer { close(upstreamFD!) }
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        XCTAssertTrue(upstream.text.hasPrefix("GET /a?x=1 HTTP/1.1\r\n"), upstream.text)
        XCTAssertTrue(upstream.text.contains("X-Forwarded-For: 192.0.2.7\r\n"), upstream.text)
        XCTAssertFalse(upstream.text.lowercased().contains("forged@example.com"), "a client's identity field never reaches the app")

        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        harness.run { client.read().text.hasSuffix("ok") }
        XCTAssertTrue(client.text.hasPrefix("HTTP/1.1 200 OK\r\n"), client.text)
        XCTAssertEqual(connection.phase, .waitingForHead, "kept alive for the next request")

        client.clear()
        upstream.clear()
        ConnectionHarness.send(clientFD, "GET /b HTTP/1.1\r\nHost: app.example\r\n\r\n")
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        XCTAssertTrue(upstream.text.hasPrefix("GET /b HTTP/1.1\r\n"), "the second request on the pooled connection")
        XCTAssertNil(harness.acceptUpstream(), "no second upstream connection")
        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 204 No Content\r\n\r\n")
        harness.run { client.read().text.contains("204") }
        XCTAssertEqual(harness.closed, 0)
    }

    func testAnUpstreamThatClosesBeforeAnsweringIsA502AndTheConnectionStaysUsable() throws {
        let harness = try ConnectionHarness()
        let (clientFD, connection) = harness.connect()
        defer { close(clientFD) }
        let client = Inbox(clientFD)
        ConnectionHarness.send(clientFD, "GET /a HTTP/1.1\r\nHost: app.example\r\n\r\n")
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        let upstream = Inbox(upstreamFD!)
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        close(upstreamFD!)
        harness.run { client.read().text.contains("\r\n\r\n") }
        XCTAssertTrue(client.text.hasPrefix("HTTP/1.1 502 "), client.text)
        harness.run { connection.phase == .waitingForHead || connection.phase == .closed }
        XCTAssertEqual(harness.closed, 0, "a failed upstream does not cost the client its connection")
    }

    /// A client that closes after its request may only have half-closed (`shutdown(SHUT_WR)`),
    /// so its end of input alone does not end the exchange; the next write to it does.
    func testAClientGoneMidResponseEndsBothLegsAtTheNextWrite() throws {
        let harness = try ConnectionHarness()
        let (clientFD, connection) = harness.connect()
        ConnectionHarness.send(clientFD, "GET /big HTTP/1.1\r\nHost: app.example\r\n\r\n")
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        defer { close(upstreamFD!) }
        let upstream = Inbox(upstreamFD!)
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 1000))
        let client = Inbox(clientFD)
        harness.run { client.read().bytes.count >= 1000 }
        close(clientFD)
        ConnectionHarness.send(upstreamFD!, String(repeating: "y", count: 1000))
        harness.run { harness.closed == 1 }
        XCTAssertEqual(connection.phase, .closed)
        harness.run { upstream.read().ended }
        XCTAssertTrue(upstream.ended, "a half-relayed upstream connection is closed, never pooled")
    }

    func testAHeadThatNeverEndsMeetsTheHeaderTimeout() throws {
        let harness = try ConnectionHarness(yaml: "limits:\n  header_timeout: 50ms\n")
        let (clientFD, _) = harness.connect()
        let client = Inbox(clientFD)
        ConnectionHarness.send(clientFD, "GET /slow HTTP/1.1\r\nHost: app.example\r\nX-Dribble: ")
        harness.run(until: { client.read().ended }, ms: 2_000)
        XCTAssertTrue(client.text.hasPrefix("HTTP/1.1 408 "), client.text)
        close(clientFD)
        harness.run { harness.closed == 1 }
        XCTAssertNil(harness.acceptUpstream(), "nothing of an unfinished head reaches the upstream")
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let harness = try ConnectionHarness()
        let (clientFD, _) = harness.connect()
        defer { close(clientFD) }
        let client = Inbox(clientFD)
        ConnectionHarness.send(clientFD, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n")
        var upstreamFD: Int32?
        harness.run { upstreamFD = upstreamFD ?? harness.acceptUpstream(); return upstreamFD != nil }
        defer { close(upstreamFD!) }
        let upstream = Inbox(upstreamFD!)
        harness.run { upstream.read().text.hasSuffix("\r\n\r\n") }
        XCTAssertTrue(upstream.text.hasPrefix("GET /1 "), upstream.text)
        XCTAssertFalse(upstream.text.contains("GET /2"), "the second waits until the first is answered")
        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
        harness.run { upstream.read().text.contains("GET /2 ") }
        ConnectionHarness.send(upstreamFD!, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
        harness.run { client.read().text.hasSuffix("two") }
        let text = client.text
        XCTAssertLessThan(try XCTUnwrap(text.range(of: "one")).lowerBound, try XCTUnwrap(text.range(of: "two")).lowerBound)
    }
}
