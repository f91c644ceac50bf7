import Glibc
import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// The access log's query masking: names as the application reads them (percent-decoded,
/// any case, separators and brackets ignored), the built-in list, the operator's names, and
/// no credential in a written line.
final class QueryRedactionTests: XCTestCase {
    private func masks(_ name: String, _ redaction: QueryRedaction = .standard) -> Bool {
        Array(name.utf8).withUnsafeBytes { redaction.masks($0) }
    }

    func testBuiltInNamesAreMaskedHoweverTheyAreSpelled() {
        for name in [
            "code", "state", "id_token", "token", "access_token", "refresh_token", "client_secret", "api_key", "apikey",
            "API-Key", "key", "sig", "X-Amz-Signature", "x-amz-credential", "X-Amz-Security-Token", "jwt", "auth",
            "password", "passwd", "pwd", "secret", "signature", "session", "nonce", "code_verifier",
            "%63ode", "%63%6F%64%65", "CODE", "Code", "code[]", "code[0]", "creds[password]", "user[auth][token]",
            "%5Bcode%5D", "code%5B%5D", "access.token", "x_amz_signature", "id-token",
        ] {
            XCTAssertTrue(masks(name), name)
        }
    }

    func testOrdinaryNamesAreNotMasked() {
        for name in ["q", "page", "v", "codes", "statement", "keyword", "sort", "tokens", "%", "%6", "[]", "", "a%2"] {
            XCTAssertFalse(masks(name), name)
        }
    }

    func testOperatorNamesAreAddedToTheBuiltInOnes() {
        let redaction = QueryRedaction(extra: ["otp", "X-Tenant-Secret"])
        XCTAssertTrue(masks("otp", redaction))
        XCTAssertTrue(masks("OTP[]", redaction))
        XCTAssertTrue(masks("x_tenant_secret", redaction))
        XCTAssertTrue(masks("code", redaction))
        XCTAssertFalse(masks("otp", .standard))
    }

    func testALongNameIsNotMistakenForAShortOne() {
        XCTAssertFalse(masks(String(repeating: "a", count: 500) + "code"))
        XCTAssertTrue(masks(String(repeating: "a", count: 500) + "[code]"))
    }

    /// Every credential-like value in the query is gone from the line, in both formats.
    func testNoCredentialReachesALogLine() throws {
        let query = "x=1&api_key=SECRET1&%63ode=SECRET2&code[]=SECRET3&X-Amz-Signature=SECRET4&jwt=SECRET5"
            + "&auth=SECRET6&password=SECRET7&secret=SECRET8&key=SECRET9&sig=SECRETA;token=SECRETB"
            + "&rd=/next?access_token=SECRETC&otp=SECRETD&y=2"
        for format in [AccessLog.Format.json, .text] {
            let line = try written(query: query, format: format, extra: ["otp"])
            XCTAssertFalse(line.contains("SECRET"), "\(format): \(line)")
            XCTAssertTrue(line.contains("x=1&api_key=***&%63ode=***&code[]=***"), line)
            XCTAssertTrue(line.contains("sig=***;token=***&rd=/next?access_token=***&otp=***&y=2"), line)
        }
    }

    private func written(query: String, format: AccessLog.Format, extra: [String]) throws -> String {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]) }
        let loop = try EventLoop()
        let log = AccessLog(loop: loop, sink: LogSink(fd: fds[1]), format: format, redaction: QueryRedaction(extra: extra))
        let path: [UInt8] = Array("/p".utf8), q = Array(query.utf8)
        path.withUnsafeBytes { pathBytes in
            q.withUnsafeBytes { queryBytes in
                var entry = AccessLog.Entry(
                    timestampMs: 1_795_813_052_123, requestId: AccessLog.none, trace: TraceContext(), client: AccessLog.none,
                    path: pathBytes, status: 200, bytes: 0, durationMs: 0)
                entry.query = queryBytes
                log.record(entry)
            }
        }
        log.flush()
        close(fds[1])
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = read(fds[0], &bytes, bytes.count)
        return String(decoding: bytes[..<max(0, n)], as: UTF8.self)
    }
}
