import SidecarHTTP
import XCTest

@testable import SidecarProxy

final class CookieHeaderTests: XCTestCase {
    private func split(_ fields: [String], name: String = "s") throws -> (value: String?, others: String) {
        let text = "GET / HTTP/1.1\r\nHost: a\r\n" + fields.map { "Cookie: \($0)\r\n" }.joined() + "\r\n"
        let head = try XCTUnwrap(try HTTPRequestHead.parse(Array(text.utf8)))
        var others: [UInt8] = Array("stale".utf8)
        let value = head.withView { view in
            CookieHeader.split(Array(name.utf8), in: view, others: &others).map {
                String(decoding: UnsafeRawBufferPointer(rebasing: view.bytes[$0]), as: UTF8.self)
            }
        }
        return (value, String(decoding: others, as: UTF8.self))
    }

    func testFindsTheFirstValueAndKeepsEveryOtherPairInOnePass() throws {
        let result = try split(["a=1; s=first;b=\"q v\"", "s=second; c=3"])
        XCTAssertEqual(result.value, "first")
        XCTAssertEqual(result.others, "a=1; b=\"q v\"; c=3")  // quotes kept, every `s` removed
    }

    func testOnlyTheSessionCookieLeavesNothing() throws {
        let result = try split(["s=\"v\""])
        XCTAssertEqual(result.value, "v")
        XCTAssertEqual(result.others, "")
    }

    func testWithoutTheSessionCookieNothingIsKeptAside() throws {
        let result = try split(["a=1; ss=2; s_=3"])
        XCTAssertNil(result.value)
        XCTAssertEqual(result.others, "")
    }
}
