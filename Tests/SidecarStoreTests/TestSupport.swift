import Foundation
import Glibc
import Synchronization
import XCTest

@testable import SidecarStore

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let seconds: Atomic<Int64>

    init(_ start: Int64 = 1_700_000_000) { seconds = Atomic(start) }

    var now: Int64 { seconds.load(ordering: .relaxed) }
    func advance(_ delta: Int64) { seconds.add(delta, ordering: .relaxed) }
    var storeClock: StoreClock { StoreClock { self.now } }
}

/// A directory under the system's temporary directory, removed with everything in it.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("sidecar-store-XXXXXX").path
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { "\(path)/\(name)" }
}

enum Files {
    static func read(_ path: String) -> [UInt8] {
        (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? []
    }

    /// Replaces the contents in place (mode 0600 when created), as a damaged disk would.
    static func write(_ bytes: [UInt8], to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        precondition(descriptor >= 0, "open \(path)")
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        precondition(written == bytes.count, "write \(path)")
    }

    static func size(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : -1
    }

    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }
}

/// A 16-byte session id made from `i`.
func sessionID(_ i: Int) -> [UInt8] {
    (0..<16).map { UInt8(truncatingIfNeeded: i >> (($0 % 8) * 8)) ^ UInt8($0) }
}

extension StoreBackend {
    /// `isRevoked` through a fresh view (tests that are not about views).
    func isRevoked(_ id: [UInt8], subject: String = "subject", issuedAtMs: Int64 = 0) -> Bool {
        var view = makeRevocationView()
        return view.isRevoked(sessionID: id, subject: subject, issuedAtMs: issuedAtMs)
    }
}

/// Runs `body` against a memory store and a fresh file store sharing `clock`.
func eachStore(
    clock: ManualClock, limits: StoreLimits = StoreLimits(), file: StaticString = #filePath, line: UInt = #line,
    _ body: (any SynchronousStore) throws -> Void
) throws {
    let directory = try TemporaryDirectory()
    let stores: [any SynchronousStore] = [
        MemoryStore(limits: limits, clock: clock.storeClock),
        try FileStore(path: directory.file("store"), limits: limits, clock: clock.storeClock),
    ]
    for store in stores {
        defer { store.close() }
        try body(store)
    }
}

/// A test of the file store in a fresh directory on a manual clock (`path`), reopened as often
/// as the test likes (`open`).
class FileStoreTestCase: XCTestCase {
    let clock = ManualClock()
    var directory: TemporaryDirectory!
    var path: String { directory.file("store") }

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory = nil }

    func open(_ limits: StoreLimits = StoreLimits()) throws -> FileStore {
        try FileStore(path: path, limits: limits, clock: clock.storeClock)
    }
}
