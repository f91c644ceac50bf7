import XCTest

@testable import SidecarProxy

/// The access line's writer: copies runs of plain bytes whole and escapes the rest, so these
/// pin the escaping at run boundaries (first byte, last byte, adjacent escapes) and numbers.
final class LogLineWriterTests: XCTestCase {
    private func json(_ build: (inout LogLineWriter) -> Void) -> String {
        var line = LogLineWriter()
        line.format = .json
        build(&line)
        return String(decoding: line.buffer, as: UTF8.self)
    }

    func testStringsAreEscapedAsJSONAtEveryPosition() {
        let value: [UInt8] = Array("\"a\\b".utf8) + [0x0A, 0x7F, 0x1F] + Array("plain".utf8) + [0xC3, 0xA9, 0x22]
        let text = json { $0.string("k", value[...]) }
        XCTAssertEqual(text, #","k":"\"a\\b\u000a\u007f\u001fplain\u00c3\u00a9\"""#)
        XCTAssertEqual(json { $0.string("empty", [][...]) }, #","empty":"""#)
        XCTAssertEqual(json { $0.string("user_id", "001234.abc") }, #","user_id":"001234.abc""#)
        // A slice that does not start at 0 (runs are indexed from the slice's start).
        let tail = Array("xx\"end".utf8)
        XCTAssertEqual(json { $0.string("k", tail[2...]) }, #","k":"\"end""#)
    }

    func testBareValuesAndSpelledOutKeysWriteWhatTheGeneralPathWrites() {
        for format in [LogLineWriter.Format.json, .text] {
            for value in ["a1b2c3d4e5f60718-2a", "GET", "000241.55ebfd382f1de608b6d24a78892f76ff.0896", "x"] {
                let bytes = Array(value.utf8)[...]
                XCTAssertTrue(LogLineWriter.isBare(bytes))
                var general = LogLineWriter(), fast = LogLineWriter()
                general.format = format
                fast.format = format
                general.string("user_id", bytes)
                general.int("status", 200)
                fast.bare(.userID, bytes)
                fast.int(.status, 200)
                XCTAssertEqual(String(decoding: fast.buffer, as: UTF8.self), String(decoding: general.buffer, as: UTF8.self))
            }
        }
        for notBare in ["", "a b", "a\"b", "a\\b", "caf\u{E9}", "tab\t", "\u{7F}"] {
            XCTAssertFalse(LogLineWriter.isBare(Array(notBare.utf8)), notBare.debugDescription)
        }
    }

    /// The access line's keyed strings (one reservation when nothing needs escaping) against
    /// the general path, for every byte value at every position of values of 0 to 20 bytes.
    func testKeyedStringsWriteWhatTheGeneralPathWrites() {
        for format in [LogLineWriter.Format.json, .text] {
            for length in 0...20 {
                for position in 0..<max(length, 1) {
                    for byte in 0...255 where length > 0 || byte == 0 {
                        var value = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                        if length > 0 { value[position] = UInt8(byte) }
                        var general = LogLineWriter(), keyed = LogLineWriter()
                        general.format = format
                        keyed.format = format
                        general.string("path", value[...])
                        value.withUnsafeBytes { keyed.string(.path, $0) }
                        XCTAssertEqual(keyed.buffer, general.buffer, "\(format) byte \(byte) at \(position) of \(length)")
                        XCTAssertEqual(value.withUnsafeBytes { LogLineWriter.isPlain($0) },
                                       value.allSatisfy(LogLineWriter.isPlain))
                    }
                }
            }
        }
    }

    /// The word-at-a-time check against the byte rule, for every byte value in every position
    /// of a 20-byte value (two words and a tail).
    func testBareCheckOfRawBytesMatchesTheByteRuleAtEveryPosition() {
        for position in 0..<20 {
            for b in 0...255 {
                var value = [UInt8](repeating: UInt8(ascii: "a"), count: 20)
                value[position] = UInt8(b)
                let expected = b > 0x20 && b < 0x7F && b != 0x22 && b != 0x5C
                value.withUnsafeBytes { raw in
                    XCTAssertEqual(LogLineWriter.isBare(raw), expected, "byte \(b) at \(position)")
                    XCTAssertEqual(LogLineWriter.isBare(UnsafeRawBufferPointer(rebasing: raw[position...])), expected)
                }
            }
        }
        XCTAssertFalse(LogLineWriter.isBare(UnsafeRawBufferPointer(start: nil, count: 0)))
    }

    /// Every byte value in every position of values of 1 to 20 bytes (whole words, tails checked
    /// as overlapping words, byte-by-byte runs) against a byte-at-a-time JSON escaper.
    func testEscapingMatchesAByteAtATimeEscaperAtEveryPositionAndLength() {
        func reference(_ bytes: [UInt8]) -> String {
            var text = ",\"k\":\""
            for b in bytes {
                switch b {
                case 0x22: text += "\\\""
                case 0x5C: text += "\\\\"
                case 0x20..<0x7F: text.unicodeScalars.append(Unicode.Scalar(b))
                default: text += "\\u00" + String(b >> 4, radix: 16) + String(b & 15, radix: 16)
                }
            }
            return text + "\""
        }
        for length in 1...20 {
            for position in 0..<length {
                for b in 0...255 {
                    var value = [UInt8](repeating: UInt8(ascii: "p"), count: length)
                    value[position] = UInt8(b)
                    XCTAssertEqual(json { $0.string("k", value[...]) }, reference(value), "byte \(b) at \(position) of \(length)")
                }
            }
        }
    }

    func testNumbers() {
        XCTAssertEqual(json { $0.int("n", 0) }, #","n":0"#)
        XCTAssertEqual(json { $0.int("n", 7) }, #","n":7"#)
        XCTAssertEqual(json { $0.int("n", 1_234_567_890_123) }, #","n":1234567890123"#)
        XCTAssertEqual(json { $0.int("n", -42) }, #","n":-42"#)
        XCTAssertEqual(json { $0.int("n", Int64.max) }, #","n":9223372036854775807"#)
    }

    func testTextFormatQuotesOnlyWhatNeedsIt() {
        var line = LogLineWriter()
        line.format = .text
        line.string("path", Array("/a/b".utf8)[...])
        line.string("agent", Array("curl/8 x".utf8)[...])
        line.int("status", 200)
        XCTAssertEqual(String(decoding: line.buffer, as: UTF8.self), #" path=/a/b agent="curl/8 x" status=200"#)
    }
}

extension LogLineWriterTests {
    /// The eight-bytes-at-a-time test against the byte-wise one, for every byte value in
    /// every position of a word of otherwise plain (and of otherwise borderline) bytes.
    func testTheWordTestAgreesWithTheByteTest() {
        for filler: UInt8 in [UInt8(ascii: "a"), 0x20, 0x7E, 0x21, 0x5B, 0x5D] {
            for position in 0..<8 {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: filler, count: 8)
                    bytes[position] = UInt8(value)
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    let expected = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }
                    XCTAssertEqual(LogLineWriter.allPlain(word), expected, "byte \(value) at \(position)")
                }
            }
        }
    }

    func testLongValuesEscapeAtWordAndRunBoundaries() {
        for length in 0..<40 {
            for position in 0..<max(length, 1) {
                var value = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                var expected = String(repeating: "x", count: length)
                if length > 0 {
                    value[position] = 0x22
                    expected = String(repeating: "x", count: position) + "\\\"" + String(repeating: "x", count: length - position - 1)
                }
                var line = LogLineWriter()
                line.string("k", value[...])
                XCTAssertEqual(String(decoding: line.buffer, as: UTF8.self), ",\"k\":\"\(expected)\"", "\(length) \(position)")
            }
        }
    }
}

/// The access line's client address behind a trusted proxy, read in place from the head.
final class ForwardedAddressTests: XCTestCase {
    private func last(_ value: String) -> String? {
        Array(value.utf8).withUnsafeBytes { bytes in
            ClientPeer.lastForwardedAddress(bytes).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    func testTheLastEntryTrimmed() {
        XCTAssertEqual(last("203.0.113.7"), "203.0.113.7")
        XCTAssertEqual(last("198.51.100.1, 203.0.113.7"), "203.0.113.7")
        XCTAssertEqual(last("spoofed,\t 2001:db8::1 \t"), "2001:db8::1")
        XCTAssertEqual(last(" a ,b"), "b")
    }

    func testNothingWhenTheLastEntryIsEmpty() {
        XCTAssertNil(last(""))
        XCTAssertNil(last("203.0.113.7,"))
        XCTAssertNil(last("203.0.113.7, \t "))
    }
}
