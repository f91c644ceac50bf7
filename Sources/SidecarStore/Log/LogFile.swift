import Glibc

/// The store's log file at the level of system calls: open and lock, header, append with
/// fdatasync, truncate, atomic replacement. Record meaning lives elsewhere (`LogRecord`,
/// `LogReplay`). Used under the file store's lock only.
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
    private let directoryDescriptor: Int32
    /// The end of the last record known to be on disk.
    private(set) var size: Int64
    /// Set when a failed write could not be undone: the log's end is then unknown, and
    /// appending after it could bury a torn record in the middle of the file.
    private(set) var failure: String?
    private let counters: StoreCounters

    private init(path: String, descriptor: Int32, directoryDescriptor: Int32, size: Int64, counters: StoreCounters) {
        self.path = path
        self.descriptor = descriptor
        self.directoryDescriptor = directoryDescriptor
        self.size = size
        self.counters = counters
        counters.fileBytes.store(UInt64(size), ordering: .relaxed)
    }

    deinit { close() }

    /// What `open` found.
    struct Opened {
        var log: LogFile
        /// The whole file, header included.
        var contents: [UInt8]
        /// Where the records start.
        var recordsStart: Int
        /// Observations for the start-up log (a new file, loose permissions).
        var notes: [String]
    }

    /// Opens (creating with mode 0600 if absent) and locks the store file, and checks its
    /// header. A file that is not a store file is left exactly as it was.
    static func open(path configuredPath: String, counters: StoreCounters) throws(StoreError) -> Opened {
        let path = try followingLinks(configuredPath)
        let directory = directoryName(of: path)
        var directoryStatus = stat()
        guard stat(directory, &directoryStatus) == 0, directoryStatus.st_mode & S_IFMT == S_IFDIR else {
            throw .directoryMissing(path: path)
        }
        let (descriptor, created) = try openOrCreate(path, directory: directory)
        var keepDescriptor = false
        defer { if !keepDescriptor { _ = Glibc.close(descriptor) } }

        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .io(path: path, operation: "fstat", errno: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notARegularFile(path: path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            if errno == EWOULDBLOCK { throw .locked(path: path) }
            throw .io(path: path, operation: "flock", errno: errno)
        }
        var contents = try readAll(descriptor, path: path)
        var notes: [String] = created ? ["created store file \(path)"] : []
        if status.st_mode & 0o077 != 0 {
            notes.append("store file \(path) is accessible to others (mode \(String(status.st_mode & 0o777, radix: 8))); chmod 600 is advised")
        }
        // An empty file (made by hand) holds nothing to lose: it becomes a store. Anything
        // else must start with the header, or it is someone else's file.
        if !contents.isEmpty { try checkHeader(contents, path: path) }

        let directoryDescriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { throw .io(path: directory, operation: "open directory", errno: errno) }
        let log = LogFile(path: path, descriptor: descriptor, directoryDescriptor: directoryDescriptor,
                          size: Int64(contents.count), counters: counters)
        keepDescriptor = true
        if contents.isEmpty {
            try log.append(header)
            contents = header
        }
        return Opened(log: log, contents: contents, recordsStart: header.count, notes: notes)
    }

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
    /// for the operator before it is repaired.
    /// `path`, or `path-1`, `path-2`… when taken; returns the name used.
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

    func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        if directoryDescriptor >= 0 { _ = Glibc.close(directoryDescriptor) }
        descriptor = -1
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

    /// Opens the existing file, else creates it complete: the header is written and synced
    /// under a temporary name, which is then hard-linked to `path` (failing if a file
    /// appeared there meanwhile — nothing is ever overwritten). So a crash during creation
    /// never leaves a half-written header that would later look like a foreign file. On a
    /// file system without hard links it falls back to an exclusive create.
    private static func openOrCreate(_ path: String, directory: String) throws(StoreError) -> (Int32, created: Bool) {
        for _ in 0..<8 {
            let existing = Glibc.open(path, O_RDWR | O_CLOEXEC)
            if existing >= 0 { return (existing, false) }
            if errno == EISDIR { throw .notARegularFile(path: path) }
            guard errno == ENOENT else { throw .io(path: path, operation: "open", errno: errno) }
            if let created = try createComplete(path, directory: directory) { return (created, true) }
        }
        // Created and removed again and again under our feet: give up rather than spin.
        throw .io(path: path, operation: "create", errno: EEXIST)
    }

    /// The file a path names once symbolic links in its last component are followed:
    /// compaction renames a new file over the log, which through a link would replace the
    /// link instead of the file it points to; and a link to a file not yet created must
    /// create that file. (Links among the directories are harmless: the rename stays in
    /// one directory either way.)
    private static func followingLinks(_ path: String) throws(StoreError) -> String {
        var current = path
        for _ in 0..<32 {
            var status = stat()
            guard lstat(current, &status) == 0, status.st_mode & S_IFMT == S_IFLNK else { return current }
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink(current, &target, target.count - 1)
            guard length > 0 else { throw .io(path: current, operation: "readlink", errno: errno) }
            let destination = String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = destination.hasPrefix("/") ? destination : "\(directoryName(of: current))/\(destination)"
        }
        throw .io(path: path, operation: "follow symbolic links", errno: ELOOP)
    }

    /// A new store file at `path`, or nil when one appeared there meanwhile.
    private static func createComplete(_ path: String, directory: String) throws(StoreError) -> Int32? {
        let temporaryPath = "\(path).creating-\(getpid())"
        let descriptor = Glibc.open(temporaryPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == ENOENT { throw .directoryMissing(path: path) }
            throw .io(path: temporaryPath, operation: "create", errno: errno)
        }
        var keep = false
        defer {
            _ = unlink(temporaryPath)
            if !keep { _ = Glibc.close(descriptor) }
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            throw .io(path: temporaryPath, operation: "flock", errno: errno)
        }
        if let code = header.withUnsafeBytes({ writeAll(descriptor, $0, at: 0) }) {
            throw .io(path: temporaryPath, operation: "write", errno: code)
        }
        guard fsync(descriptor) == 0 else { throw .io(path: temporaryPath, operation: "fsync", errno: errno) }
        if link(temporaryPath, path) != 0 {
            switch errno {
            case EEXIST:
                return nil
            case EPERM, EOPNOTSUPP, EXDEV, EMLINK:
                // No hard links here: create in place (a crash now could leave a torn header).
                let direct = Glibc.open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                if direct < 0 { if errno == EEXIST { return nil }; throw .io(path: path, operation: "create", errno: errno) }
                _ = Glibc.close(descriptor)
                keep = true
                if let code = header.withUnsafeBytes({ writeAll(direct, $0, at: 0) }) {
                    _ = Glibc.close(direct)
                    throw .io(path: path, operation: "write", errno: code)
                }
                return try syncCreated(direct, path: path, directory: directory)
            default:
                throw .io(path: path, operation: "link", errno: errno)
            }
        }
        keep = true
        return try syncCreated(descriptor, path: path, directory: directory)
    }

    /// Makes a new file and its directory entry durable.
    private static func syncCreated(_ descriptor: Int32, path: String, directory: String) throws(StoreError) -> Int32 {
        let directoryDescriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if directoryDescriptor >= 0 { _ = Glibc.close(directoryDescriptor) } }
        guard fsync(descriptor) == 0, directoryDescriptor >= 0, fsync(directoryDescriptor) == 0 else {
            let code = errno
            _ = Glibc.close(descriptor)
            throw .io(path: path, operation: "sync new file", errno: code)
        }
        return descriptor
    }

    private static func checkHeader(_ contents: [UInt8], path: String) throws(StoreError) {
        guard contents.starts(with: magic) else { throw .foreignFile(path: path) }
        let versionBytes = contents[magic.count...].prefix(16)
        guard let newline = versionBytes.firstIndex(of: UInt8(ascii: "\n")) else { throw .foreignFile(path: path) }
        let version = String(decoding: contents[magic.count..<newline], as: UTF8.self)
        guard version == String(formatVersion) else { throw .unsupportedVersion(path: path, version: version) }
    }

    private static func readAll(_ descriptor: Int32, path: String) throws(StoreError) -> [UInt8] {
        var contents = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", errno: errno)
            }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[0..<count])
            offset += off_t(count)
        }
    }
}

/// Writes all of `bytes` at `offset` (looping over short writes); the errno on failure.
private func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
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
