import XCTest
import SidecarHTTP

/// Every framing/syntax rule and the evhttp findings: each head must be refused
/// with the given error (and its status).
final class RequestHeadRejectionTests: XCTestCase {
    let table: [(String, String, HTTPHeadError)] = [
        ("bare LF ends a field", "GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n", .bareLF),
        ("bare LF ends the head", "GET / HTTP/1.1\r\nHost: h\r\n\n", .bareLF),
        ("bare LF in request line", "GET / HTTP/1.1\nHost: h\r\n\r\n", .bareLF),
        ("bare LF only", "GET / HTTP/1.1\nHost: h\n\n", .bareLF),
        ("bare CR in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", .bareCR),
        ("NUL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{0}b\r\n\r\n", .controlCharacter),
        ("DEL in value", "GET / HTTP/1.1\r\nHost: h\r\nX: a\u{7F}\r\n\r\n", .controlCharacter),
        ("ESC in value", "GET / HTTP/1.1\r\nHost: h\r\nX: \u{1B}[0m\r\n\r\n", .controlCharacter),
        ("NUL in target", "GET /a\u{0}b HTTP/1.1\r\nHost: h\r\n\r\n", .controlCharacter),
        ("NUL in name", "GET / HTTP/1.1\r\nHost: h\r\nX\u{0}Y: z\r\n\r\n", .invalidFieldName),
        ("obs-fold SP", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", .obsFold),
        ("obs-fold HTAB", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", .obsFold),
        ("space before colon", "GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 3\r\n\r\nabc", .whitespaceBeforeColon),
        ("tab before colon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", .whitespaceBeforeColon),
        ("space in name", "GET / HTTP/1.1\r\nHost: h\r\nX Y: z\r\n\r\n", .invalidFieldName),
        ("empty name", "GET / HTTP/1.1\r\nHost: h\r\n: z\r\n\r\n", .invalidFieldName),
        ("no colon", "GET / HTTP/1.1\r\nHost: h\r\nJunk\r\n\r\n", .invalidFieldName),
        ("bad name char", "GET / HTTP/1.1\r\nHost: h\r\nX(y): z\r\n\r\n", .invalidFieldName),
        ("non-ASCII name", "GET / HTTP/1.1\r\nHost: h\r\nXé: z\r\n\r\n", .invalidFieldName),
        ("CL and TE", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding),
        ("TE and CL", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", .contentLengthWithTransferEncoding),
        ("different CLs", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", .conflictingContentLength),
        ("CL list differs", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 6\r\n\r\n", .conflictingContentLength),
        ("CL plus sign", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\n", .invalidContentLength),
        ("CL minus", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", .invalidContentLength),
        ("CL trailing junk", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:  3x\r\n\r\n", .invalidContentLength),
        ("CL hex", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", .invalidContentLength),
        ("CL empty", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", .invalidContentLength),
        ("CL empty list element", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5,,5\r\n\r\n", .invalidContentLength),
        ("CL inner space", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", .invalidContentLength),
        ("CL overflow", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n", .invalidContentLength),
        ("TE gzip", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", .unsupportedTransferEncoding),
        ("TE gzip, chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("TE chunked, chunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("TE twice", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("TE chunked;x", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;x=1\r\n\r\n", .unsupportedTransferEncoding),
        ("TE empty", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n", .unsupportedTransferEncoding),
        ("TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .unsupportedTransferEncoding),
        ("missing Host", "GET / HTTP/1.1\r\nX: y\r\n\r\n", .missingHost),
        ("two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .multipleHost),
        ("two equal Hosts", "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", .multipleHost),
        ("Host with slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", .invalidHost),
        ("Host with space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", .invalidHost),
        ("HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", .unsupportedVersion),
        ("HTTP/0.9", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", .unsupportedVersion),
        ("HTTP/1.2", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", .unsupportedVersion),
        ("lower-case version", "GET / http/1.1\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("no version", "GET /\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("two spaces", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("trailing space", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("tab separator", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", .controlCharacter),
        ("empty method", " / HTTP/1.1\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("bad method char", "G@T / HTTP/1.1\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("non-ASCII target", "GET /é HTTP/1.1\r\nHost: h\r\n\r\n", .malformedRequestLine),
        ("fragment", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("relative target", "GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("asterisk with GET", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("ftp absolute", "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("absolute without authority", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("absolute with userinfo", "GET http://u@h/x HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("absolute with a quote in the host", "GET http://a\"b/x HTTP/1.0\r\n\r\n", .invalidTarget),
        ("absolute with a backslash in the host", "GET http://a\\b/x HTTP/1.1\r\nHost: h\r\n\r\n", .invalidTarget),
        ("CONNECT", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", .connectNotAllowed),
        ("CR LF then garbage", "\r\n\r\n/ x\r\n\r\n", .malformedRequestLine),
        ("CR not LF before line", "\r\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", .bareCR),
    ]

    func testEveryRuleIsEnforced() {
        for (name, text, expected) in table {
            let result = parseRequest(Array(text.utf8))
            XCTAssertEqual(result.error, expected, name)
        }
    }

    func testStatusMapping() {
        XCTAssertEqual(HTTPHeadError.unsupportedVersion.status, 505)
        XCTAssertEqual(HTTPHeadError.connectNotAllowed.status, 405)
        for (name, _, error) in table where ![.unsupportedVersion, .connectNotAllowed].contains(error) {
            XCTAssertEqual(error.status, 400, name)
        }
    }

    /// Errors are detected as soon as the offending line is complete, before the head ends.
    func testBareLFIsRefusedWithoutWaitingForMoreData() {
        XCTAssertEqual(parseRequest(Array("GET / HTTP/1.1\nHost: h".utf8)).error, .bareLF)
    }
}
