import Glibc
import SidecarConfig
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
    /// The client connection's allowance it counts against while it serves an exchange of
    /// an HTTP/2 connection (given back by `UpstreamPool.release`/`discard`).
    var allowance: UpstreamAllowance?
    /// Counted in its pool's and the worker's open connections until closed.
    var isCounted = true
    /// In its pool's idle list since then (the loop's milliseconds); -1 while not idle.
    var idleSinceMs: Int64 = -1
    /// TLS: connected, the server not verified yet. The owner hears of the connect only once
    /// the handshake is over (`upstream(_:didConnect:)`), so the connect deadline covers both.
    private(set) var isHandshaking: Bool

    init(stream: Stream, pool: UpstreamPool, tls: Bool = false) {
        self.stream = stream
        self.pool = pool
        isHandshaking = tls
        stream.delegate = self
    }

    func close() { stream.close() }

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        if isHandshaking {
            isHandshaking = false
            owner?.upstream(self, didConnect: error == 0 ? ECONNRESET : error)
        } else if let owner {
            owner.upstream(self, didRead: count, error: error)
        } else {
            pool.discard(self)  // idle: EOF, error or unsolicited bytes all end it
        }
    }

    func streamDidDrain(_ stream: Stream) { owner?.upstreamDidDrain(self) }

    func stream(_ stream: Stream, didConnect error: Int32) {
        if error == 0, isHandshaking {
            stream.startTLSHandshake()
            return
        }
        isHandshaking = false
        owner?.upstream(self, didConnect: error)
    }

    func streamDidHandshake(_ stream: Stream) {
        isHandshaking = false
        owner?.upstream(self, didConnect: 0)
    }
}

/// Per-worker pool of idle keep-alive upstream connections (LIFO: the warmest first), one
/// per upstream, with what the worker needs to know of that upstream.
final class UpstreamPool {
    private let loop: EventLoop
    let address: SocketAddress
    let capacity: Int
    private let reaper: Reaper
    let budget: UpstreamBudget
    private var idle: [UpstreamConnection] = []
    /// Open connections (busy, connecting or idle), and `max_connections`' share of this
    /// worker (0: no cap of its own).
    private(set) var open = 0
    var limit = 0
    /// Replaced (reload) or shutting down: connections coming back are closed.
    private var isRetired = false
    /// As access lines and error messages name it (`127.0.0.1:3000`).
    var text: [UInt8] = []
    /// `default` or its name in `upstreams`.
    var name = "default"
    /// Its slot in the upstream metrics (`ServerLabels`): the catch-all until configured.
    var metricsSlot = ServerLabels.slots - 1
    var timeoutMs: Int64 = 60_000
    var connectTimeoutMs: Int64 = 5_000
    /// `upstream_idle_timeout`: `idle` is oldest first, so a sweep closes from the front those
    /// idle this long, then waits for the next one's turn. Scheduled only while some are idle.
    var idleTimeoutMs: Int64 = 60_000
    private let idleSweep: Timer
    private var isSweepScheduled = false
    /// TLS failures (a refused certificate fails every request alike), logged at most once per interval.
    var tlsFailureLog = RateLimitedLog(intervalMs: 10_000)

    var idleCount: Int { idle.count }
    /// Connections serving an exchange or connecting for one.
    var busyCount: Int { open - idle.count }

    /// An `https://` upstream's TLS, the name this server must prove, and the session its
    /// next connection resumes.
    let tls: UpstreamTLSContext?
    let tlsName: (name: String, isIPLiteral: Bool)
    private let sessions = TLSSessionSlot()
    /// Its share of the upstream's requests, and whether it is taken out (`ServerHealth`).
    var weight = 1
    var health = ServerHealth()
    /// Its upstream's, when it has other servers (health is then kept); nil alone.
    var balancing: Config.Balancing?
    /// The `Host` its health checks send.
    var hostField = "localhost"

    init(loop: EventLoop, address: SocketAddress, capacity: Int, reaper: Reaper, budget: UpstreamBudget,
         tls: UpstreamTLSContext? = nil, host: String = "") {
        self.loop = loop
        self.tls = tls
        tlsName = tls?.serverName(host: host) ?? ("", false)
        self.reaper = reaper
        self.budget = budget
        self.address = address
        self.capacity = capacity
        idleSweep = Timer(loop: loop)
        idleSweep.onFire { [unowned self] in self.closeExpiredIdle() }
    }

    /// The warmest idle connection. With `verify`, the socket is first peeked (one extra
    /// syscall) so a close the loop has not processed yet is caught: used for requests that
    /// cannot be retried safely (a POST sent on a half-closed connection would be lost).
    func take(verify: Bool) -> UpstreamConnection? {
        while let connection = idle.popLast() {
            connection.idleSinceMs = -1
            if connection.stream.isClosed {
                uncount(connection)
                continue
            }
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
            if let tls { return secure(fd, tls) }
            counted()
            return .ready(UpstreamConnection(stream: Stream(loop: loop, fd: fd), pool: self))
        case .inProgress(let fd):
            if let tls { return secure(fd, tls) }
            counted()
            return .connecting(UpstreamConnection(stream: Stream(loop: loop, fd: fd, connecting: true), pool: self))
        case .failed(let code):
            return .failed(code)
        }
    }

    /// A stream of its own to this server for a health check (`HealthProbe`, its delegate):
    /// connecting, over the same TLS as requests; not pooled and not counted. Nil when the
    /// connect failed at once (errno in `failure`).
    func probeStream(failure: inout Int32) -> Stream? {
        let fd: Int32
        switch Socket.connect(to: address) {
        case .connected(let connected), .inProgress(let connected): fd = connected
        case .failed(let code):
            failure = code
            return nil
        }
        guard let tls else { return Stream(loop: loop, fd: fd, connecting: true) }
        guard let ssl = tls.context.makeSSL(host: tlsName.name, isIPLiteral: tlsName.isIPLiteral) else {
            Socket.close(fd)
            failure = ENOMEM
            return nil
        }
        sessions.attach(to: ssl)
        return Stream(loop: loop, fd: fd, connecting: true, clientTLS: ssl)
    }

    /// A TLS connection on `fd`, connected or not: the handshake starts once the socket is
    /// writable (at once if it is connected already), and it offers the last session kept.
    private func secure(_ fd: Int32, _ tls: UpstreamTLSContext) -> ConnectResult {
        guard let ssl = tls.context.makeSSL(host: tlsName.name, isIPLiteral: tlsName.isIPLiteral) else {
            Socket.close(fd)
            return .failed(ENOMEM)
        }
        sessions.attach(to: ssl)
        counted()
        let stream = Stream(loop: loop, fd: fd, connecting: true, clientTLS: ssl)
        return .connecting(UpstreamConnection(stream: stream, pool: self, tls: true))
    }

    /// Returns a connection whose last exchange ended cleanly (a full response: the server is
    /// healthy, `serverAnswered`).
    func release(_ connection: UpstreamConnection) {
        serverAnswered()
        connection.owner = nil
        giveBack(connection)
        guard !isRetired, idle.count < capacity, !connection.stream.isClosed,
              connection.stream.pendingInput == 0, connection.stream.pendingOutput == 0
        else {
            discard(connection)
            return
        }
        connection.isReused = true
        if connection.stream.isReadPaused { connection.stream.resumeReading() }
        connection.idleSinceMs = loop.nowMilliseconds
        idle.append(connection)
        if !isSweepScheduled { scheduleSweep(afterMs: idleTimeoutMs) }
        budget.freed()
    }

    private func scheduleSweep(afterMs delay: Int64) {
        isSweepScheduled = true
        idleSweep.schedule(afterMilliseconds: max(1, delay))
    }

    private func closeExpiredIdle() {
        isSweepScheduled = false
        let now = loop.nowMilliseconds
        var expired = 0
        while expired < idle.count, now - idle[expired].idleSinceMs >= idleTimeoutMs { expired += 1 }
        closeIdle(expired)
        if let oldest = idle.first { scheduleSweep(afterMs: oldest.idleSinceMs + idleTimeoutMs - now) }
    }

    /// Closes a connection; it is freed only after the current callback (it may be the
    /// caller's own).
    func discard(_ connection: UpstreamConnection) {
        connection.owner = nil
        giveBack(connection)
        connection.close()
        if connection.idleSinceMs >= 0, let index = idle.firstIndex(where: { $0 === connection }) {
            idle.remove(at: index)
        }
        connection.idleSinceMs = -1
        uncount(connection)
        reaper.retire(connection)
    }

    /// Closes the idle connections and refuses returning ones.
    func retire() {
        isRetired = true
        closeIdle(idle.count)
    }

    /// Closes up to `count` idle connections, the oldest first (to make room under a cap,
    /// or descriptors at the limit). Returns how many.
    @discardableResult
    func closeIdle(_ count: Int) -> Int {
        let closing = idle.prefix(count)
        idle.removeFirst(closing.count)
        for connection in closing {
            connection.idleSinceMs = -1
            connection.close()
            uncount(connection)
            reaper.retire(connection)
        }
        return closing.count
    }

    private func counted() {
        open += 1
        budget.opened()
    }

    private func uncount(_ connection: UpstreamConnection) {
        guard connection.isCounted else { return }
        connection.isCounted = false
        open -= 1
        budget.closed()
    }

    /// Its client connection's allowance gets the connection back.
    @inline(__always)
    private func giveBack(_ connection: UpstreamConnection) {
        guard let allowance = connection.allowance else { return }
        allowance.held -= 1
        connection.allowance = nil
        budget.freed()
    }
}
