import CEvent
import Glibc

/// Thin, non-blocking socket system calls.
public enum Socket {
    /// A listening socket; `reusePort` lets every worker bind its own socket to one port.
    public static func listen(on address: SocketAddress, reusePort: Bool, backlog: Int32 = 1024)
        throws(EventError) -> Int32
    {
        let domain = address.family == .inet ? AF_INET : address.family == .inet6 ? AF_INET6 : AF_UNIX
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno: errno) }
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        if reusePort { setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw .system("bind \(address)", errno: code)
        }
        guard CEvent.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw .system("listen \(address)", errno: code)
        }
        return fd
    }

    /// Fails with EADDRINUSE when any socket listens on `address` — also one with
    /// `SO_REUSEPORT`, which the workers' own SO_REUSEPORT binds would silently join (the
    /// kernel would then split the traffic between two processes). A probe bound without
    /// SO_REUSEPORT is refused by any listener on the port; SO_REUSEADDR keeps connections
    /// in TIME_WAIT from a previous run from refusing it. Port 0 (any free port) needs no
    /// probe. For a Unix socket path: a path something answers on is in use; a stale socket
    /// file left by a crashed run is removed.
    public static func ensureNoListener(on address: SocketAddress, unixPath: String? = nil) throws(EventError) {
        if address.family == .unix {
            guard let unixPath else { return }
            var status = stat()
            guard lstat(unixPath, &status) == 0 else { return }  // no file: free
            guard (status.st_mode & S_IFMT) == S_IFSOCK else {
                throw .system("bind \(address) (exists and is not a socket)", errno: EADDRINUSE)
            }
            let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard probe >= 0 else { throw .system("socket", errno: errno) }
            let answered = address.withSockaddr { Glibc.connect(probe, $0, $1) } == 0
            close(probe)
            if answered { throw .system("bind \(address)", errno: EADDRINUSE) }
            _ = unlink(unixPath)
            return
        }
        guard address.port != 0 else { return }
        let domain = address.family == .inet ? AF_INET : AF_INET6
        let probe = socket(domain, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw .system("socket", errno: errno) }
        defer { close(probe) }
        setOption(probe, SOL_SOCKET, SO_REUSEADDR, 1)
        let bound = address.withSockaddr { bind(probe, $0, $1) }
        if bound != 0 {
            let code = errno
            throw .system("bind \(address)", errno: code)
        }
    }

    /// The address a socket is bound to (to learn an ephemeral port).
    public static func localAddress(of fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return ok == 0 ? SocketAddress(storage: storage, length: length) : nil
    }

    public enum AcceptResult { case accepted(Int32, SocketAddress), wouldBlock, failed(Int32) }

    public static func accept(_ listener: Int32) -> AcceptResult {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sidecar_accept4(listener, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            }
        }
        if fd >= 0 { return .accepted(fd, SocketAddress(storage: storage, length: length)) }
        let code = errno
        return code == EAGAIN || code == EWOULDBLOCK ? .wouldBlock : .failed(code)
    }

    public enum ConnectResult { case connected(Int32), inProgress(Int32), failed(Int32) }

    /// Starts a non-blocking connect; `inProgress` completes when the fd becomes writable.
    public static func connect(to address: SocketAddress) -> ConnectResult {
        let domain = address.family == .inet ? AF_INET : address.family == .inet6 ? AF_INET6 : AF_UNIX
        let fd = socket(domain, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed(errno) }
        if address.family != .unix { setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
        let rc = address.withSockaddr { CEvent.connect(fd, $0, $1) }
        if rc == 0 { return .connected(fd) }
        let code = errno
        if code == EINPROGRESS || code == EAGAIN { return .inProgress(fd) }
        close(fd)
        return .failed(code)
    }

    /// The pending error of a non-blocking connect (0 when it succeeded).
    public static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return errno }
        return value
    }

    /// False when the peer has closed, reset, or sent bytes nobody asked for (an idle
    /// keep-alive connection must have nothing to read).
    public static func isOpenForReading(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// Whether bytes wait to be read (a request that arrived since the loop last looked).
    public static func hasPendingInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    public static func setNoDelay(_ fd: Int32) { setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1) }

    public static func close(_ fd: Int32) { _ = CEvent.close(fd) }

    private static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }
}
