import Glibc
import SidecarEvent
import SidecarHTTP
import SidecarStore

/// The admin listener: `GET /healthz`, `GET /readyz` and `GET /metrics`, and the users'
/// endpoints (`UserAdministration`), on the project's small HTTP server (`ServiceServer`), one
/// request per connection. Runs on the control loop, never on a proxy worker.
final class AdminServer {
    private let loop: EventLoop
    private var server: ServiceServer?
    private let readiness: Readiness
    let metrics: MetricsBoard
    let spans: SpanExporter?
    /// What `/readyz` checks: each upstream (the top-level one first), replaced on reload.
    var upstreams: [ReadinessTarget]
    private let options: ProxyOptions
    var version: String { options.version }
    var store: (any StoreBackend)? { options.auth?.shared.store }
    var authShared: AuthShared? { options.auth?.shared }
    let reaper: Reaper
    private let users: UserAdministration
    /// The store's connection on this loop, made for the users' endpoints (a networked store).
    private var attachedStore: (any StoreBackend)?

    /// Probes and scrapers send small GETs: heads of 8 KiB, no bodies worth reading, a
    /// connection each, answered within 10 s of their first byte.
    static let serverOptions: ServiceServer.Options = {
        var options = ServiceServer.Options()
        options.maxHeadBytes = 8 * 1024
        options.maxBodyBytes = 4 * 1024
        options.headerTimeoutMs = 10_000
        options.bodyTimeoutMs = 10_000
        options.idleTimeoutMs = 10_000
        options.maxConnections = 64
        options.keepAlive = false
        return options
    }()

    init(
        loop: EventLoop, fd: Int32, options: ProxyOptions, readiness: Readiness, metrics: MetricsBoard,
        upstreams: [ReadinessTarget], spans: SpanExporter? = nil, listener: SocketAddress? = nil
    ) {
        self.loop = loop
        self.metrics = metrics
        self.spans = spans
        self.readiness = readiness
        self.upstreams = upstreams
        self.options = options
        reaper = Reaper(loop: loop)
        let access = AdminAccess(token: options.config.admin.token, listener: listener)
        let store = options.auth?.shared.store
        users = UserAdministration(
            store: store, access: access,
            keepSeconds: options.config.session.lifetime.seconds + options.config.apple.leeway.seconds,
            apple: options.auth.map { OperatorAppleRevocation(settings: $0, loop: loop) })
        if !access.isOff, let store {
            store.attach(to: loop)
            attachedStore = store
        }
        server = ServiceServer(loop: loop, listeningFD: fd, options: Self.serverOptions) { [unowned self] request, respond in
            self.answer(request, respond)
        }
    }

    func close() {
        server?.close()
        attachedStore?.detach()
        attachedStore = nil
    }

    private func answer(_ request: ServiceRequest, _ respond: @escaping (ServiceResponse) -> Void) {
        if request.path.hasPrefix(UserAdministration.pathPrefix) { return users.answer(request, respond) }
        guard request.head.method == .get || request.head.method == .head else {
            return respond(Self.text(405, "method not allowed\n"))
        }
        switch request.path {
        case "/healthz":
            respond(Self.text(200, "ok\n"))
        case "/metrics":
            let body = metrics.render() + StoreMetricsExposition.render(store) + SignInRateMetrics.render(authShared)
                + (spans?.renderMetrics() ?? "") + (options.certificateReport?.metrics() ?? "")
                + ProcessMetrics.render(version: version)
            respond(ServiceResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: body,
                headers: [("Cache-Control", "no-store")]))
        case "/readyz":
            checkReadiness { failing in
                respond(Self.text(failing.isEmpty ? 200 : 503, failing.isEmpty ? "ready\n" : failing.joined(separator: "\n") + "\n"))
            }
        default:
            respond(Self.text(404, "not found\n"))
        }
    }

    private static func text(_ status: Int, _ body: String) -> ServiceResponse {
        ServiceResponse(status: status, contentType: "text/plain; charset=utf-8", body: body, headers: [("Cache-Control", "no-store")])
    }

    /// Ready when every worker holds Apple's keys (or needs none) and each upstream accepted a
    /// connection recently (otherwise it is probed now). `done` gets the failing conditions,
    /// none when ready. (The configuration is loaded: the process would not run otherwise.)
    func checkReadiness(_ done: @escaping ([String]) -> Void) {
        var keys = readiness.appleKeysReady ? [] : ["apple keys not fetched"]
        if let problem = options.certificateReport?.readinessProblem() { keys.append(problem) }
        if let store = options.auth?.shared.store, !store.health.isReady, case .unavailable(let why) = store.health.state {
            keys.append("store \(store.health.location) unavailable: \(why)")
        }
        let now = loop.nowMilliseconds
        var known = Set<Int>()
        for (index, target) in upstreams.enumerated() {
            guard let reason = readiness.upstreamFailure(index) else { continue }
            known.insert(index)
            keys.append("\(target.label) failing: \(reason)")
        }
        let probed = upstreams.enumerated().filter { index, _ in
            !known.contains(index) && !readiness.upstreamRecentlyReachable(index, nowMs: now, windowMs: options.readinessWindowMs)
        }
        guard !probed.isEmpty else {
            done(keys)
            return
        }
        // An upstream is reachable when one of its servers is; unreachable, its servers are named.
        var unreachable = [String?](repeating: nil, count: probed.count)
        let servers = probed.map { $0.element.servers(resolved: readiness.resolvedNames) }
        var pending = servers.reduce(0) { $0 + $1.count }
        for (slot, (index, target)) in probed.enumerated() {
            var answers = 0
            var reached = false
            let named = target.namesServers(servers[slot])
            for server in servers[slot] {
                let probe = UpstreamProbe(loop: loop, address: server.address, timeoutMs: target.connectTimeoutMs) {
                    [unowned self] reachable in
                    answers += 1
                    if reachable && !reached {
                        reached = true
                        self.readiness.upstreamSucceeded(index, atMs: self.loop.nowMilliseconds)
                    }
                    if answers == servers[slot].count, !reached {
                        // One server at a fixed address: the upstream names it; else each is named.
                        let list = named ? " (\(servers[slot].map(\.text).joined(separator: ", ")))" : ""
                        unreachable[slot] = "\(target.label) unreachable" + list
                    }
                    pending -= 1
                    if pending == 0 { done(keys + unreachable.compactMap { $0 }) }
                }
                probe.start(reaper: reaper)
            }
        }
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
