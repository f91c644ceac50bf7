import Glibc
import SidecarEvent
import SidecarHTTP
import SidecarStore

/// The admin listener: `GET /healthz`, `GET /readyz` and `GET /metrics`, one
/// request per connection. Runs on the control loop, never on a proxy worker.
final class AdminServer {
    private let loop: EventLoop
    private var listener: Listener?
    private let readiness: Readiness
    let metrics: MetricsBoard
    var upstreamAddress: SocketAddress
    private let options: ProxyOptions
    var version: String { options.version }
    var store: (any StoreBackend)? { options.auth?.shared.store }
    var authShared: AuthShared? { options.auth?.shared }
    private var connections: [ObjectIdentifier: AdminConnection] = [:]
    let reaper: Reaper

    init(
        loop: EventLoop, fd: Int32, options: ProxyOptions, readiness: Readiness, metrics: MetricsBoard,
        upstreamAddress: SocketAddress
    ) {
        self.loop = loop
        self.metrics = metrics
        self.readiness = readiness
        self.upstreamAddress = upstreamAddress
        self.options = options
        reaper = Reaper(loop: loop)
        listener = Listener(loop: loop, fd: fd) { [unowned self] fd, _ in
            guard self.connections.count < 64 else {
                Socket.close(fd)
                return
            }
            let connection = AdminConnection(server: self, loop: loop, fd: fd)
            self.connections[ObjectIdentifier(connection)] = connection
        }
    }

    func close() {
        listener?.close()
        for connection in Array(connections.values) { connection.close() }
    }

    func closed(_ connection: AdminConnection) {
        if let removed = connections.removeValue(forKey: ObjectIdentifier(connection)) {
            reaper.retire(removed)
        }
    }

    /// Ready when every worker holds Apple's keys (or needs none) and the upstream accepted a
    /// connection recently (otherwise it is probed now). `done` gets the failing conditions,
    /// none when ready. (The configuration is loaded: the process would not run otherwise.)
    func checkReadiness(_ done: @escaping ([String]) -> Void) {
        var keys = readiness.appleKeysReady ? [] : ["apple keys not fetched"]
        if let store = options.auth?.shared.store, !store.health.isReady, case .unavailable(let why) = store.health.state {
            keys.append("store \(store.health.location) unavailable: \(why)")
        }
        if readiness.upstreamRecentlyReachable(nowMs: loop.nowMilliseconds, windowMs: options.readinessWindowMs) {
            done(keys)
            return
        }
        let probe = UpstreamProbe(loop: loop, address: upstreamAddress, timeoutMs: options.upstreamConnectTimeoutMs) {
            [unowned self] reachable in
            if reachable { self.readiness.upstreamSucceeded(atMs: self.loop.nowMilliseconds) }
            done(reachable ? keys : keys + ["upstream unreachable"])
        }
        probe.start(reaper: reaper)
    }
}

/// A non-blocking connect to the upstream with a deadline.
final class UpstreamProbe: StreamDelegate {
    private let loop: EventLoop
    private let address: SocketAddress
    private let timeoutMs: Int64
    private var done: ((Bool) -> Void)?
    private var stream: Stream?
    private var timer: Timer?
    private var reaper: Reaper?
    private var keepAlive: UpstreamProbe?

    init(loop: EventLoop, address: SocketAddress, timeoutMs: Int64, done: @escaping (Bool) -> Void) {
        self.loop = loop
        self.address = address
        self.timeoutMs = timeoutMs
        self.done = done
    }

    func start(reaper: Reaper) {
        self.reaper = reaper
        keepAlive = self
        switch Socket.connect(to: address) {
        case .connected(let fd):
            Socket.close(fd)
            finish(true)
        case .inProgress(let fd):
            stream = Stream(loop: loop, fd: fd, connecting: true)
            stream?.delegate = self
            timer = Timer(loop: loop) { [unowned self] in self.finish(false) }
            timer?.schedule(afterMilliseconds: timeoutMs)
        case .failed:
            finish(false)
        }
    }

    func stream(_ stream: Stream, didConnect error: Int32) { finish(error == 0) }
    func stream(_ stream: Stream, didRead count: Int, error: Int32) {}
    func streamDidDrain(_ stream: Stream) {}

    private func finish(_ reachable: Bool) {
        guard let done else { return }
        self.done = nil
        timer?.cancel()
        stream?.close()
        done(reachable)
        if let keepAlive { reaper?.retire(keepAlive) }
        keepAlive = nil
    }
}

final class AdminConnection: StreamDelegate {
    private unowned let server: AdminServer
    private let stream: Stream
    private var timer: Timer?
    private var answered = false

    init(server: AdminServer, loop: EventLoop, fd: Int32) {
        self.server = server
        stream = Stream(loop: loop, fd: fd)
        stream.delegate = self
        timer = Timer(loop: loop) { [unowned self] in self.close() }
        timer?.schedule(afterMilliseconds: 10_000)
    }

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        guard count > 0 else {
            close()
            return
        }
        guard !answered else { return }
        let head: HTTPRequestHead?
        do {
            let parsed = try stream.input.withPrefix(max: stream.pendingInput) { bytes throws(HTTPHeadError) in
                try HTTPRequestHead.parse(bytes, limits: HTTPHeadLimits(maxHeadBytes: 8192))
            }
            guard let parsed else { return }
            head = parsed
        } catch {
            answer(error.status, error.status == 431 ? "too large\n" : "bad request\n")
            return
        }
        guard let head else { return }
        answered = true
        let path = head.string(head.path)
        guard head.method == .get || head.method == .head else {
            answer(405, "method not allowed\n")
            return
        }
        switch path {
        case "/healthz":
            answer(200, "ok\n")
        case "/metrics":
            answer(200, server.metrics.render() + StoreMetricsExposition.render(server.store) + SignInRateMetrics.render(server.authShared) + ProcessMetrics.render(version: server.version), contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/readyz":
            server.checkReadiness { [weak self] failing in
                self?.answer(failing.isEmpty ? 200 : 503, failing.isEmpty ? "ready\n" : failing.joined(separator: "\n") + "\n")
            }
        default:
            answer(404, "not found\n")
        }
    }

    func streamDidDrain(_ stream: Stream) { close() }
    func stream(_ stream: Stream, didConnect error: Int32) {}

    private func answer(_ status: Int, _ body: String, contentType: String = "text/plain; charset=utf-8") {
        answered = true
        let (reason, _) = LocalResponse.describe(status)
        let reasonText = status == 200 ? "OK" : "\(reason)"
        let text = "HTTP/1.1 \(status) \(reasonText)\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(body.utf8.count)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n\(body)"
        stream.output.append(Array(text.utf8))
        if stream.flush() != 0 || stream.pendingOutput == 0 { close() }
    }

    func close() {
        timer?.cancel()
        stream.close()
        server.closed(self)
    }
}
