import Foundation
import SidecarApple
import XCTest

/// Request serialization and response framing against the local TLS server.
final class AppleHTTPClientFramingTests: XCTestCase {
    private func fetch(_ path: String, maxBodyBytes: Int = 1 << 20, method: AppleHTTPRequest.Method = .GET) throws -> TestLoop.Outcome {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(
            loop, "https://localhost:\(servers.port("good"))", caFile: servers.caFile, maxBodyBytes: maxBodyBytes)
        let outcome = loop.run(client, AppleHTTPRequest(method: method, path: path))
        XCTAssertEqual(outcome.completions, 1)
        XCTAssertEqual(loop.registeredEvents, 0)
        return outcome
    }

    func testContentLengthBody() throws {
        let response = try XCTUnwrap(fetch("/length").result?.response)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("content-type"), "text/plain")
        XCTAssertEqual(response.body, Array("exactly these bytes".utf8))
    }

    func testChunkedBody() throws {
        let response = try XCTUnwrap(fetch("/chunked").result?.response)
        XCTAssertEqual(response.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual(response.body, Array("first,second,".utf8) + Array(repeating: UInt8(ascii: "x"), count: 5000) + Array("end".utf8))
    }

    func testBodyUntilClose() throws {
        XCTAssertEqual(try fetch("/until-close").result?.response?.body, Array("body until close".utf8))
    }

    func testContentLengthBodyOverTheLimitIsRefused() throws {
        XCTAssertEqual(try fetch("/big").result, .failure(.bodyTooLarge))
    }

    func testChunkedBodyOverTheLimitIsRefused() throws {
        XCTAssertEqual(try fetch("/big-chunked").result, .failure(.bodyTooLarge))
        XCTAssertEqual(try fetch("/big-chunked", maxBodyBytes: 4 << 20).result?.response?.body.count, 32 * 65536)
    }

    func testTruncatedBodyIsConnectionClosed() throws {
        XCTAssertEqual(try fetch("/truncated").result, .failure(.connectionClosed))
    }

    func testMalformedStatusLine() throws {
        XCTAssertEqual(try fetch("/malformed").result, .failure(.malformedResponse))
    }

    func testFormBodyAndHeadersAreSentAsSpecified() throws {
        let servers = try TestServers.get()
        let loop = TestLoop()
        let client = try makeClient(loop, "https://localhost:\(servers.port("good"))/base/", caFile: servers.caFile)
        let fields = [("grant type", "a+b&c=d e"), ("utf8", "José ✓"), ("empty", ""), ("reserved", "/?#[]@!$'()*,;%")]
        let outcome = loop.run(client, .form(path: "/echo", fields: fields))
        let body = try XCTUnwrap(outcome.result?.response?.body)
        let echo = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let headers = try XCTUnwrap(echo["headers"] as? [String: String])
        let expected = "grant%20type=a%2Bb%26c%3Dd%20e&utf8=Jos%C3%A9%20%E2%9C%93&empty=&reserved=%2F%3F%23%5B%5D%40%21%24%27%28%29%2A%2C%3B%25"
        XCTAssertEqual(echo["body"] as? String, expected)
        XCTAssertEqual(echo["method"] as? String, "POST")
        XCTAssertEqual(echo["path"] as? String, "/base/echo")
        XCTAssertEqual(headers["user-agent"], AppleHTTPClient.defaultUserAgent)
        XCTAssertTrue(AppleHTTPClient.defaultUserAgent.hasPrefix("siwa-sidecar/"))
        XCTAssertEqual(headers["accept"], "application/json")
        XCTAssertEqual(headers["content-type"], "application/x-www-form-urlencoded")
        XCTAssertEqual(headers["content-length"], String(expected.utf8.count))
        XCTAssertEqual(headers["host"], "localhost:\(servers.port("good"))")
    }
}
