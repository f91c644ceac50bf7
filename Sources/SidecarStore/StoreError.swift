import Glibc

/// Why a store could not be opened or could not do what was asked. Every case names what
/// an operator needs to fix it (the path, the errno text), since these end up in the log.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file exists but does not start with the store's header: not ours, left untouched.
    case foreignFile(path: String)
    /// A store file of a format version this sidecar does not read.
    case unsupportedVersion(path: String, version: String)
    /// The store file's directory does not exist (it is not created: a typo should not
    /// silently put the revocations somewhere nobody backs up).
    case directoryMissing(path: String)
    /// Another process (or another store in this one) has the file open.
    case locked(path: String)
    case notARegularFile(path: String)
    /// A system call failed: `operation` on `path`, with `errno`.
    case io(path: String, operation: String, errno: Int32)
    case invalidArgument(String)
    /// The forward queue is at its bound; the caller logs the event it could not queue.
    case forwardQueueFull(count: Int, bytes: Int)
    /// A write failed in a way that leaves the log's end unknown: the store refuses all
    /// changes until the process restarts and replays the file.
    case failed(String)
    /// The store was closed.
    case closed
    /// A shared back-end cannot be reached (Redis): retry later.
    case unavailable(String)

    public var description: String {
        switch self {
        case .foreignFile(let path):
            return "\(path) is not a sidecar store file (no \"SIWA-SIDECAR-STORE\" header); it was left untouched — choose another path"
        case .unsupportedVersion(let path, let version):
            return "\(path) is a sidecar store of format version \(version); this sidecar reads version \(LogFile.formatVersion)"
        case .directoryMissing(let path):
            return "the directory of the store file \(path) does not exist"
        case .locked(let path):
            return "the store file \(path) is in use by another sidecar process (flock); two processes cannot share a file store — use redis:// for several replicas"
        case .notARegularFile(let path):
            return "the store path \(path) is not a regular file"
        case .io(let path, let operation, let code):
            return "\(operation) \(path): \(String(cString: strerror(code)))"
        case .invalidArgument(let reason):
            return "invalid store argument: \(reason)"
        case .forwardQueueFull(let count, let bytes):
            return "the notification forward queue is full (\(count) forwards, \(bytes) bytes pending)"
        case .failed(let reason):
            return "the store stopped accepting changes after a write error: \(reason)"
        case .closed:
            return "the store is closed"
        case .unavailable(let reason):
            return "the store is unavailable: \(reason)"
        }
    }
}
