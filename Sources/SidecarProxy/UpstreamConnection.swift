import SidecarEvent

/// Events an upstream connection reports to the client connection it currently serves.
protocol UpstreamOwner: AnyObject {
    func upstream(_ upstream: UpstreamConnection, didRead count: Int, error: Int32)
    func upstreamDidDrain(_ upstream: UpstreamConnection)
    func upstream(_ upstream: UpstreamConnection, didConnect error: Int32)
}

/// One connection to the upstream. While idle in the pool it keeps its read event, so an
/// upstream close (or stray bytes) is noticed at once and the connection dropped.
final class UpstreamConnection: StreamDelegate {
    let stream: Stream
    /// Safe unretained: a client connection owns this one while it is the owner, and hands
    /// it back (`UpstreamPool.release`/`discard`, which clear this) before it goes away.
    unowned(unsafe) var owner: (any UpstreamOwner)?
    /// Strong: a pool replaced by a reload must live until its last connection is done.
    let pool: UpstreamPool
    /// Served at least one response before (a failure on it may be a stale keep-alive).
    var isReused = false

    init(stream: Stream, pool: UpstreamPool) {
        self.stream = stream
        self.pool = pool
        stream.delegate = self
    }

    func close() { stream.close() }

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        if let owner {
            owner.upstream(self, didRead: count, error: error)
        } else {
            pool.discard(self)  // idle: EOF, error or unsolicited bytes all end it
        }
    }

    func streamDidDrain(_ stream: Stream) { owner?.upstreamDidDrain(self) }

    func stream(_ stream: Stream, didConnect error: Int32) {
        owner?.upstream(self, didConnect: error)
    }
}

/// Per-worker pool of idle keep-alive upstream connections (LIFO: the warmest first), one
/// per upstream, with what the worker needs to know of that upstream.
final class UpstreamPool {
    private let loop: EventLoop
    let address: SocketAddress
    let capacity: Int
    private let reaper: Reaper
    private var idle: [UpstreamConnection] = []
    /// Replaced (reload) or shutting down: connections coming back are closed.
    private var isRetired = false
    /// As access lines and error messages name it (`127.0.0.1:3000`).
    var text: [UInt8] = []
    /// `default` or its name in `upstreams`.
    var name = "default"
    var timeoutMs: Int64 = 60_000
    var connectTimeoutMs: Int64 = 5_000

    init(loop: EventLoop, address: SocketAddress, capacity: Int, reaper: Reaper) {
        self.loop = loop
        self.reaper = reaper
        self.address = address
        self.capacity = capacity
        idle.reserveCapacity(capacity)
    }

    /// The warmest idle connection. With `verify`, the socket is first peeked (one extra
    /// syscall) so a close the loop has not processed yet is caught: used for requests that
    /// cannot be retried safely (a POST sent on a half-closed connection would be lost).
    func take(verify: Bool) -> UpstreamConnection? {
        while let connection = idle.popLast() {
            if connection.stream.isClosed { continue }
            if verify && !Socket.isOpenForReading(connection.stream.fd) {
                discard(connection)
                continue
            }
            return connection
        }
        return nil
    }

    enum ConnectResult { case ready(UpstreamConnection), connecting(UpstreamConnection), failed(Int32) }

    func connect() -> ConnectResult {
        switch Socket.connect(to: address) {
        case .connected(let fd):
            return .ready(UpstreamConnection(stream: Stream(loop: loop, fd: fd), pool: self))
        case .inProgress(let fd):
            return .connecting(UpstreamConnection(stream: Stream(loop: loop, fd: fd, connecting: true), pool: self))
        case .failed(let code):
            return .failed(code)
        }
    }

    /// Returns a connection whose last exchange ended cleanly.
    func release(_ connection: UpstreamConnection) {
        connection.owner = nil
        guard !isRetired, idle.count < capacity, !connection.stream.isClosed,
              connection.stream.pendingInput == 0, connection.stream.pendingOutput == 0
        else {
            discard(connection)
            return
        }
        connection.isReused = true
        if connection.stream.isReadPaused { connection.stream.resumeReading() }
        idle.append(connection)
    }

    /// Closes a connection; it is freed only after the current callback (it may be the
    /// caller's own).
    func discard(_ connection: UpstreamConnection) {
        connection.owner = nil
        connection.close()
        if let index = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: index) }
        reaper.retire(connection)
    }

    /// Closes the idle connections and refuses returning ones.
    func retire() {
        isRetired = true
        for connection in idle {
            connection.close()
            reaper.retire(connection)
        }
        idle.removeAll()
    }
}
