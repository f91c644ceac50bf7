import Glibc

/// The store's log file at the level of system calls: append with fdatasync, truncate,
/// atomic replacement (opening, locking and the header: `LogFile+Opening.swift`). Record meaning lives elsewhere (`LogRecord`,
/// `LogReplay`). Used under the file store's lock only.
///
/// The file: the line `SIWA-SIDECAR-STORE/1\n` (magic and format version, so a file that
/// is not a store is recognized and left alone), then records framed as `LogRecord`
/// describes, appended one `pwrite` each.
///
/// Glibc calls rather than Foundation: every durability step is explicit (pwrite at a known
/// offset, fdatasync, rename, a directory fsync) and each failure has its errno.
final class LogFile {
    static let formatVersion = 1
    static let magic = Array("SIWA-SIDECAR-STORE/".utf8)
    /// The first line of every store file: the magic and the format version.
    static let header = magic + Array("\(formatVersion)\n".utf8)

    let path: String
    private(set) var descriptor: Int32
    private var directoryDescriptor: Int32
    /// The end of the last record known to be on disk.
    private(set) var size: Int64
    /// Set when a failed write could not be undone: the log's end is then unknown, and
    /// appending after it could bury a torn record in the middle of the file.
    private(set) var failure: String?
    private let counters: StoreCounters

    init(path: String, descriptor: Int32, directoryDescriptor: Int32, size: Int64, counters: StoreCounters) {
        self.path = path
        self.descriptor = descriptor
        self.directoryDescriptor = directoryDescriptor
        self.size = size
        self.counters = counters
        counters.fileBytes.store(UInt64(size), ordering: .relaxed)
    }

    deinit { close() }

    /// Appends `bytes` and waits until they are on disk. On failure nothing of them stays
    /// in the file; if even that cannot be ensured the log stops accepting appends.
    func append(_ bytes: [UInt8]) throws(StoreError) {
        if let failure { throw .failed(failure) }
        let start = size
        if let code = bytes.withUnsafeBytes({ writeAll(descriptor, $0, at: start) }) {
            throw rollBack(to: start, after: .io(path: path, operation: "write", errno: code))
        }
        if let code = timedSync(fdatasync) {
            throw rollBack(to: start, after: .io(path: path, operation: "fdatasync", errno: code))
        }
        size = start + Int64(bytes.count)
        counters.fileBytes.store(UInt64(size), ordering: .relaxed)
    }

    /// Cuts the file back to `length` (a torn tail at open) and makes that durable.
    func truncate(to length: Int64) throws(StoreError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw .io(path: path, operation: "ftruncate", errno: errno) }
        if let code = timedSync(fdatasync) { throw .io(path: path, operation: "fdatasync", errno: code) }
        size = length
        counters.fileBytes.store(UInt64(size), ordering: .relaxed)
    }

    /// Replaces the whole log with `header ‖ records` atomically: written beside it, synced,
    /// locked, renamed over it, directory synced. A crash at any point leaves either the old
    /// file or the new one, both complete. On failure the old log stays in use.
    func replace(records: [UInt8]) throws(StoreError) {
        if let failure { throw .failed(failure) }
        let temporaryPath = path + ".compact"
        let replacement = Glibc.open(temporaryPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard replacement >= 0 else { throw .io(path: temporaryPath, operation: "open", errno: errno) }
        var installed = false
        defer {
            if !installed {
                _ = Glibc.close(replacement)
                _ = unlink(temporaryPath)
            }
        }
        // Locked before it takes the name, so another process never finds the store unlocked.
        guard flock(replacement, LOCK_EX | LOCK_NB) == 0 else {
            throw .io(path: temporaryPath, operation: "flock", errno: errno)
        }
        let contents = Self.header + records
        if let code = contents.withUnsafeBytes({ writeAll(replacement, $0, at: 0) }) {
            throw .io(path: temporaryPath, operation: "write", errno: code)
        }
        if let code = timedSync(fsync, replacement) { throw .io(path: temporaryPath, operation: "fsync", errno: code) }
        guard rename(temporaryPath, path) == 0 else { throw .io(path: path, operation: "rename", errno: errno) }
        installed = true
        _ = Glibc.close(descriptor)
        descriptor = replacement
        size = Int64(contents.count)
        counters.fileBytes.store(UInt64(size), ordering: .relaxed)
        // The new file is complete either way; if the rename is not durable yet, a crash
        // brings back the old file, which is complete too.
        try syncDirectory()
    }

    /// Writes `bytes` to a new file (mode 0600) and syncs it: the copy of a corrupt log kept
    /// for the operator before it is repaired. Named `path`, or `path-1`, `path-2`… when
    /// taken (never overwritten); returns the name used.
    static func writeCopy(_ bytes: [UInt8], to path: String) throws(StoreError) -> String {
        var name = path
        var descriptor = Glibc.open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        var suffix = 0
        while descriptor < 0 && errno == EEXIST && suffix < 100 {
            suffix += 1
            name = "\(path)-\(suffix)"
            descriptor = Glibc.open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        guard descriptor >= 0 else { throw .io(path: name, operation: "create", errno: errno) }
        defer { _ = Glibc.close(descriptor) }
        if let code = bytes.withUnsafeBytes({ writeAll(descriptor, $0, at: 0) }) {
            throw .io(path: path, operation: "write", errno: code)
        }
        guard fsync(descriptor) == 0 else { throw .io(path: name, operation: "fsync", errno: errno) }
        return name
    }

    /// Closes each descriptor once (then marks it closed): `deinit` calls this again after an
    /// explicit close, and a second close of a number the kernel has handed out since would
    /// close another file.
    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        if directoryDescriptor >= 0 { _ = Glibc.close(directoryDescriptor) }
        descriptor = -1
        directoryDescriptor = -1
        failure = failure ?? "closed"
    }

    func syncDirectory() throws(StoreError) {
        if let code = timedSync(fsync, directoryDescriptor) {
            throw .io(path: Self.directoryName(of: path), operation: "fsync directory", errno: code)
        }
    }

    // MARK: helpers

    /// Undoes a failed append: the file is cut back to where it ended, so a partial record
    /// never sits before later ones. Returns the error to throw.
    private func rollBack(to start: Int64, after error: StoreError) -> StoreError {
        counters.writeFailures.add(1, ordering: .relaxed)
        if ftruncate(descriptor, off_t(start)) == 0 && fdatasync(descriptor) == 0 { return error }
        failure = "\(error); the file could not be cut back to \(start) bytes"
        return .failed(failure!)
    }

    /// Runs a sync call, timing it for the metrics; the errno on failure.
    private func timedSync(_ call: (Int32) -> Int32, _ target: Int32? = nil) -> Int32? {
        let started = Self.monotonicMicroseconds()
        let result = call(target ?? descriptor)
        let code = result == 0 ? nil : errno
        counters.recordSync(microseconds: Self.monotonicMicroseconds() &- started)
        return code
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000 &+ UInt64(now.tv_nsec / 1000)
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

}

/// Writes all of `bytes` at `offset` (looping over short writes); the errno on failure.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
    var written = 0
    while written < bytes.count {
        let count = pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written, off_t(offset) + off_t(written))
        if count < 0 {
            if errno == EINTR { continue }
            return errno
        }
        written += count
    }
    return nil
}
