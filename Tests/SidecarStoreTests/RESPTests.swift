@testable import SidecarStore
@testable import SidecarRESP
import XCTest

final class RESPTests: XCTestCase {
    private let parser = RESPParser()

    private func parse(_ text: String) -> RESPParser.Outcome { parser.parse(Array(text.utf8)) }

    func testEveryReplyType() {
        XCTAssertEqual(parse("+OK\r\n"), .value(.simple("OK"), consumed: 5))
        XCTAssertEqual(parse("-WRONGPASS no\r\n"), .value(.error("WRONGPASS no"), consumed: 15))
        XCTAssertEqual(parse(":-42\r\n"), .value(.integer(-42), consumed: 6))
        XCTAssertEqual(parse("$3\r\nabc\r\n"), .value(.bulk(Array("abc".utf8)), consumed: 9))
        XCTAssertEqual(parse("$-1\r\n"), .value(.bulk(nil), consumed: 5))
        XCTAssertEqual(parse("$0\r\n\r\n"), .value(.bulk([]), consumed: 6))
        XCTAssertEqual(parse("*-1\r\n"), .value(.array(nil), consumed: 5))
        XCTAssertEqual(parse("*2\r\n:1\r\n*1\r\n+x\r\n"), .value(.array([.integer(1), .array([.simple("x")])]), consumed: 16))
    }

    func testPartialRepliesAreIncompleteAndTheTailIsLeft() {
        let whole = "*2\r\n$5\r\nhello\r\n:7\r\n+NEXT\r\n"
        for cut in 0..<19 {
            XCTAssertEqual(parser.parse(Array(whole.utf8.prefix(cut))), .incomplete, "cut at \(cut)")
        }
        XCTAssertEqual(parse(whole), .value(.array([.bulk(Array("hello".utf8)), .integer(7)]), consumed: 19))
    }

    func testMalformedAndOversizedRepliesAreRefused() {
        XCTAssertEqual(parse("?x\r\n"), .invalid("unknown reply type byte 63"))
        XCTAssertEqual(parse(":12a\r\n"), .invalid("integer reply is not a number"))
        XCTAssertEqual(parse(":99999999999999999999\r\n"), .invalid("integer reply is not a number"))
        XCTAssertEqual(parse("$3\r\nabcd\r\n"), .invalid("bulk reply not terminated by CRLF"))
        XCTAssertEqual(parse("$-2\r\n"), .invalid("bad bulk length"))
        var small = RESPParser()
        small.maximumBulkBytes = 10
        small.maximumElements = 2
        small.maximumDepth = 2
        XCTAssertEqual(small.parse(Array("$11\r\n".utf8)), .invalid("bulk reply of 11 bytes is over the limit"))
        XCTAssertEqual(small.parse(Array("*3\r\n".utf8)), .invalid("array of 3 elements is over the limit"))
        XCTAssertEqual(small.parse(Array("*1\r\n*1\r\n*1\r\n:1\r\n".utf8)), .invalid("arrays nested too deep"))
        let endless = "+" + String(repeating: "a", count: RESPParser.maximumLineBytes + 10)
        XCTAssertEqual(parse(endless), .invalid("reply line longer than \(RESPParser.maximumLineBytes) bytes"))
    }

    func testCommandsAreArraysOfBulkStrings() {
        let command = RESP.command("SET", "k", "v v")
        XCTAssertEqual(String(decoding: command, as: UTF8.self), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv v\r\n")
        XCTAssertEqual(parser.parse(command), .value(.array([.bulk(Array("SET".utf8)), .bulk([0x6B]), .bulk(Array("v v".utf8))]),
                                                     consumed: command.count))
    }

    func testRevocationMessagesRoundTripAndForgeriesAreIgnored() {
        let id = Key128(Array(0..<16))
        XCTAssertEqual(Key128(hex: Array(id.hex.utf8)), id)
        XCTAssertEqual(RedisSchema.decode(Array("s \(id.hex) 1700000000".utf8)), .session(id, expiresAt: 1_700_000_000))
        XCTAssertEqual(RedisSchema.decode(Array("u 1700000000123 1700600000 001234.abc def".utf8)),
                       .subject("001234.abc def", SubjectRevocation(cutoffMs: 1_700_000_000_123, keepUntil: 1_700_600_000)))
        for bad in ["", "s", "s zz 1", "s \(id.hex)", "u 1 2", "u x 2 sub", "x 1 2 3", "ss \(id.hex) 1"] {
            XCTAssertNil(RedisSchema.decode(Array(bad.utf8)), bad)
        }
    }

    func testPendingForwardsAreRebuiltInOrderWithTheirAttempts() {
        let forwards = RedisStore.forwards(
            [(Array("7".utf8), Array("{\"b\":1}".utf8)), (Array("3".utf8), Array("{\"a\":1}".utf8))],
            [(Array("3".utf8), Array("1700000000:2:1700000100".utf8)), (Array("7".utf8), Array("1700000050:0:0".utf8))])
        XCTAssertEqual(forwards.map(\.id.rawValue), [3, 7])
        XCTAssertEqual(forwards[0].attempts, 2)
        XCTAssertEqual(forwards[0].lastAttemptAt, 1_700_000_100)
        XCTAssertNil(forwards[1].lastAttemptAt)
    }
}
