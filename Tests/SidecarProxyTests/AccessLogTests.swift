import Glibc
import SidecarEvent
import SidecarHTTP
import XCTest

@testable import SidecarProxy

/// `AccessLog` copies the start of an `info` line kept from the last line of the same
/// millisecond; every line must still carry its own time and level.
final class AccessLogTests: XCTestCase {
    func testEachLineHasItsOwnTimeAndLevelWhenItsStartIsReused() throws {
        for format in [AccessLog.Format.json, .text] {
            var fds: [Int32] = [0, 0]
            XCTAssertEqual(pipe(&fds), 0)
            defer { close(fds[0]) }
            let loop = try EventLoop()
            let log = AccessLog(loop: loop, sink: LogSink(fd: fds[1]), format: format)
            // 2026-11-27T20:57:32.123Z and the next millisecond, a warning among the infos.
            let base: Int64 = 1_795_813_052_123
            let plan: [(Int64, Int)] = [(0, 200), (0, 200), (0, 502), (0, 200), (1, 200), (1, 404), (1000, 200), (1000, 500)]
            for (offset, status) in plan {
                let path: [UInt8] = Array("/p\(status)".utf8)
                path.withUnsafeBytes { pathBytes in
                    log.record(AccessLog.Entry(
                        timestampMs: base + offset, requestId: AccessLog.none, trace: TraceContext(), client: AccessLog.none,
                        path: pathBytes, status: status, bytes: 0, durationMs: 0))
                }
            }
            log.flush()
            close(fds[1])
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fds[0], &chunk, chunk.count)
                if n <= 0 { break }
                bytes += chunk[..<n]
            }
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.count, plan.count, "\(format)")
            for ((offset, status), line) in zip(plan, lines) {
                let time = offset == 0 ? "2026-11-27T20:57:32.123Z" : offset == 1 ? "2026-11-27T20:57:32.124Z" : "2026-11-27T20:57:33.123Z"
                let level = status >= 500 ? "warning" : "info"
                let expected = format == .json
                    ? "{\"ts\":\"\(time)\",\"level\":\"\(level)\",\"msg\":\"request\","
                    : "\(time) \(level) request "
                XCTAssertTrue(line.hasPrefix(expected), "\(format) \(offset) \(status): \(line)")
                XCTAssertTrue(line.contains("/p\(status)"), line)
            }
        }
    }
}
