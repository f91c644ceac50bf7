import Glibc

/// The demo's private directory: its client key, cookie secret and sidecar.yaml. They are
/// secrets, however throwaway, so the directory goes on every way out:
/// - a normal return or a start-up error: `remove()`, from the caller's `defer`;
/// - SIGINT/SIGTERM while serving: the server drains and returns, then as above;
/// - SIGINT/SIGTERM/SIGHUP before the server handles signals itself (or after it stopped):
///   `installSignalCleanup()`'s handler deletes the files and ends the process.
/// Only SIGKILL (or a crash) leaves it behind.
final class DemoDirectory {
    let path: String

    /// Creates `$TMPDIR/sidecar-demo-XXXXXX` (mode 0700; `/tmp` when TMPDIR is unset).
    /// Signals are held off from before the directory exists until the cleanup handler knows
    /// it, so there is no moment at which an interrupt could leave it behind.
    init() throws {
        var base = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        if base.isEmpty { base = "/tmp" }
        let made: String? = Self.withStopSignalsBlocked {
            var template = Array("\(base)/sidecar-demo-XXXXXX".utf8CString)
            let made: String? = template.withUnsafeMutableBufferPointer { buffer in
                guard let start = buffer.baseAddress, mkdtemp(start) != nil else { return nil }
                return String(cString: start)
            }
            if let made { SignalCleanup.register(directory: made) }
            return made
        }
        guard let made else {
            throw RuntimeFailure("demo: cannot create a temporary directory in \(base): \(String(cString: strerror(errno)))")
        }
        path = made
        Self.installSignalCleanup()
    }

    /// Writes `text` to `name` in the directory, readable by the owner only (it holds keys),
    /// and returns the file's path. The name is registered for the signal handler first, so a
    /// file is never on disk unknown to it.
    @discardableResult
    func write(_ text: String, to name: String) throws -> String {
        let file = path + "/" + name
        SignalCleanup.register(file: file)
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw RuntimeFailure("demo: cannot write \(file)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw RuntimeFailure("demo: cannot write \(file)")
        }
        return file
    }

    /// Deletes every file in the directory (ours, and anything put there since), then the
    /// directory. Ordinary code: not for a signal handler.
    func remove() {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { unlink(path + "/" + name) }
        }
        rmdir(path)
        SignalCleanup.forget()
    }

    /// Runs `body` with SIGINT, SIGTERM and SIGHUP blocked on this thread; threads it starts
    /// inherit the mask, so helper threads (the emulator's, the demo app's) started inside
    /// never take these signals and the handler runs on this thread, between its steps.
    static func withStopSignalsBlocked<T>(_ body: () throws -> T) rethrows -> T {
        var blocked = sigset_t()
        var previous = sigset_t()
        sigemptyset(&blocked)
        for signal in SignalCleanup.signals { sigaddset(&blocked, signal) }
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return try body()
    }

    private static func installSignalCleanup() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { signal in
            SignalCleanup.removeAll()
            // Die of the signal, as an interrupted program does, so the shell sees it.
            Glibc.signal(signal, SIG_DFL)
            raise(signal)
        }
        sigemptyset(&action.sa_mask)
        for signal in SignalCleanup.signals { sigaction(signal, &action, nil) }
    }
}

/// What the signal handler may touch: fixed C strings prepared in ordinary code, read in the
/// handler with only async-signal-safe calls (`unlink`, `rmdir`) — no allocation, no locks.
/// Written only by the thread that runs the demo, and only with the stop signals blocked
/// or before the directory exists, so the handler never sees a half-made entry.
private enum SignalCleanup {
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
    static let capacity = 16

    nonisolated(unsafe) private static let paths: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
        let paths = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: capacity + 1)
        paths.initialize(repeating: nil, count: capacity + 1)
        return paths
    }()
    /// Slot 0 is the directory; files follow.
    nonisolated(unsafe) private static var count = 1

    static func register(directory: String) {
        paths[0] = strdup(directory)
    }

    static func register(file: String) {
        guard count < capacity else { return }
        DemoDirectory.withStopSignalsBlocked {
            paths[count] = strdup(file)
            count += 1
        }
    }

    static func forget() {
        DemoDirectory.withStopSignalsBlocked {
            for index in 0..<count {
                free(paths[index])
                paths[index] = nil
            }
            count = 1
        }
    }

    /// Async-signal-safe.
    static func removeAll() {
        var index = 1
        while index < count {
            if let file = paths[index] { unlink(file) }
            index += 1
        }
        if let directory = paths[0] { rmdir(directory) }
    }
}
