import Glibc

/// Serializes writes of complete log lines from several workers to one fd (stdout).
public final class LogSink: @unchecked Sendable {
    private let fd: Int32
    private var lock = pthread_mutex_t()

    public init(fd: Int32 = 1) {
        self.fd = fd
        pthread_mutex_init(&lock, nil)
    }

    deinit { pthread_mutex_destroy(&lock) }

    func write(_ bytes: UnsafeRawBufferPointer) {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }  // stdout gone: drop the log rather than block the proxy
            offset += n
        }
    }
}
