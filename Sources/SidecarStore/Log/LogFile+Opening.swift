import Glibc

/// Opening the log: following a symbolic link, creating the file complete, locking it
/// against a second process, checking the header, reading it whole for the replay.
extension LogFile {
    /// What `open` found.
    struct Opened {
        var log: LogFile
        /// The whole file, header included.
        var contents: [UInt8]
        /// Where the records start.
        var recordsStart: Int
        /// Warnings for the start-up log (loose permissions).
        var notes: [String]
        /// The file did not exist and was made by this open.
        var created: Bool
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
        var notes: [String] = []
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
        return Opened(log: log, contents: contents, recordsStart: header.count, notes: notes, created: created)
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
