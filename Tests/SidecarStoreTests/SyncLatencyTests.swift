import Foundation
import Glibc
import XCTest

@testable import SidecarStore

/// Prints what an fsynced append costs on this machine's temporary directory (not an
/// assertion: timing belongs to benchmarks). `SIDECAR_STORE_BENCH_DIR` picks another
/// directory, e.g. the volume the store will live on.
final class SyncLatencyTests: XCTestCase {
    func testAppendLatencyIsPrinted() throws {
        let temporary = try TemporaryDirectory()
        let directory = ProcessInfo.processInfo.environment["SIDECAR_STORE_BENCH_DIR"] ?? temporary.path
        let path = "\(directory)/sync-latency-\(getpid())"
        defer { unlink(path) }
        let store = try FileStore(path: path)
        defer { store.close() }

        var latencies: [UInt64] = []
        for i in 0..<100 {
            let start = LogFile.monotonicMicroseconds()
            XCTAssertEqual(store.claim(.loginState, key: "bench-\(i)", expiresAt: Int64(time(nil)) + 600), .claimed)
            latencies.append(LogFile.monotonicMicroseconds() - start)
        }
        latencies.sort()
        let metrics = store.metrics
        print("""
            file store append + fdatasync, 100 claims in \(directory): \
            median \(latencies[50]) µs, p90 \(latencies[90]) µs, max \(latencies[99]) µs per call; \
            fdatasync alone: mean \(metrics.syncMicrosecondsTotal / max(1, metrics.syncs)) µs, \
            max \(metrics.syncMicrosecondsMax) µs over \(metrics.syncs) syncs
            """)
    }
}
