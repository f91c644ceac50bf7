import Glibc

/// The progress file of `sidecar transfer export|import`: one line per user Apple answered
/// for, appended and fsynced a batch at a time, so a run interrupted at any point (a crash,
/// `kill -9`, Apple down) resumes where it stopped and asks Apple again for at most the batch
/// that was in flight. Its first line names the job; a file of another job is refused rather
/// than mixed in.
///
/// Line format: `<input id>\t<output CSV row>`; a torn last line (no newline) is dropped.
final class TransferJournal {
    private let fd: Int32
    let path: String
    /// Input id → its CSV row, for every user already answered.
    private(set) var done: [String: String] = [:]
    private var pending: [UInt8] = []

    init(path: String, job: String) throws {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_APPEND, 0o600)
        guard fd >= 0 else { throw RuntimeFailure("\(path): cannot open the progress file: \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw RuntimeFailure("\(path): another transfer run is using this progress file")
        }
        let bytes = try Self.readAll(fd, path: path)
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // The part after the last newline is a torn append: it never counted.
        let kept = bytes.count - (lines.last?.count ?? 0)
        lines.removeLast()
        if kept != bytes.count { _ = ftruncate(fd, off_t(kept)) }
        let header = "# sidecar transfer " + job
        if let first = lines.first {
            guard String(decoding: first, as: UTF8.self) == header else {
                close(fd)
                throw RuntimeFailure("\(path) is the progress file of another job (\(String(decoding: first.prefix(120), as: UTF8.self)));"
                    + " give this one another --progress file")
            }
            for line in lines.dropFirst() {
                guard let tab = line.firstIndex(of: UInt8(ascii: "\t")) else { continue }
                done[String(decoding: line[line.startIndex..<tab], as: UTF8.self)] =
                    String(decoding: line[(tab + 1)...], as: UTF8.self)
            }
        } else {
            pending = Array((header + "\n").utf8)
            try flush()
        }
    }

    deinit { close(fd) }

    /// Notes one answered user (durable at the next `flush`).
    func record(_ id: String, row: String) {
        done[id] = row
        pending += Array((id + "\t" + row + "\n").utf8)
    }

    /// Writes what was recorded and waits for the disk.
    func flush() throws {
        var offset = 0
        while offset < pending.count {
            let n = pending.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw RuntimeFailure("\(path): cannot write the progress file: \(String(cString: strerror(errno)))") }
            offset += n
        }
        pending.removeAll(keepingCapacity: true)
        guard fdatasync(fd) == 0 else { throw RuntimeFailure("\(path): fdatasync failed: \(String(cString: strerror(errno)))") }
    }

    private static func readAll(_ fd: Int32, path: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var offset: off_t = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw RuntimeFailure("\(path): cannot read the progress file: \(String(cString: strerror(errno)))") }
            if n == 0 { return bytes }
            bytes += buffer[0..<n]
            offset += off_t(n)
        }
    }
}
