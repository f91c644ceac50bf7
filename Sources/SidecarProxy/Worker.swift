import Glibc
import Logging
import SidecarConfig
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// One event loop on one thread with its own listening socket (SO_REUSEPORT), its own
/// upstream pool, access-log buffer and request-id generator. Nothing mutable is shared
/// with other workers.
final class Worker: ConnectionRegistry {
    let loop: EventLoop
    /// What this worker's connections reach of it (settings, pools, clock, logs).
    private(set) var context: ConnectionContext!
    private var listener: Listener?
    private var clients: [ObjectIdentifier: any FrontConnection] = [:]
    private let maxConnections: Int
    private var drainDeadline: Timer?
    private var shutdownWakeup: Wakeup?
    private var reloadWakeup: Wakeup?
    private let settings: SharedSettings
    /// Delivers queued account events to `notifications.forward_to`; on worker 0 only.
    private var forwarder: NotificationForwarder?

    init(
        index: Int, settings: SharedSettings, listenFD: Int32, readiness: Readiness,
        board: MetricsBoard, spans: SpanQueue, logSink: LogSink, shutdown: WakeupChannel, reload: WakeupChannel
    ) throws(EventError) {
        let (sharedOptions, upstreamAddresses) = settings.current
        let options = Self.workerCopy(of: sharedOptions)
        self.settings = settings
        loop = try EventLoop()
        // Before anything on this loop asks the store (the forwarder does at once).
        options.auth?.shared.store.attach(to: loop)
        let metrics = MetricsRecorder(loop: loop, board: board, readiness: readiness, worker: index)
        maxConnections = max(1, options.config.limits.maxConnections / max(1, options.config.workers))
        do {
            context = try ConnectionContext(
                loop: loop, options: options, upstreamAddresses: upstreamAddresses, metrics: metrics, readiness: readiness,
                spans: spans, logSink: logSink, registry: self, upstreamLimit: maxConnections)
        } catch {
            throw .libevent("\(error)")
        }
        if index == 0, let settings = options.auth {
            forwarder = NotificationForwarder(loop: loop, settings: settings, metrics: metrics)
        }
        listener = Listener(loop: loop, fd: listenFD) { [unowned self] fd, peer in
            self.accept(fd, peer: peer)
        }
        listener?.onDescriptorsExhausted = { [unowned self] code in
            DescriptorGuard.exhausted(self.context, errno: code, clients: Array(self.clients.values))
        }
        shutdownWakeup = Wakeup(loop: loop, channel: shutdown) { [unowned self] in self.beginDrain() }
        reloadWakeup = Wakeup(loop: loop, channel: reload) { [unowned self] in self.applySettings() }
    }

    /// SIGHUP: take the reloaded settings. Connections keep running; new requests see the
    /// new policy, rules, header rules, limits and timeouts.
    private func applySettings() {
        let (sharedOptions, addresses) = settings.current
        let options = Self.workerCopy(of: sharedOptions)
        // A new certificate: HTTP/2 clients would keep their connections (and the old
        // certificate) for as long as they like; GOAWAY sends them to a new one, after the
        // streams in progress finish.
        if let tls = options.tls, tls !== context.settings.options.tls {
            for case let connection as HTTP2Connection in clients.values { connection.drain() }
        }
        if let settings = options.auth { forwarder?.apply(settings) }
        context.apply(options, upstreamAddresses: addresses)
    }

    /// The options with this worker's own copy of the sign-in settings, which the request
    /// path reads (`AuthSettings(workerCopyOf:)`: no object that every worker writes).
    static func workerCopy(of shared: ProxyOptions) -> ProxyOptions {
        var options = shared
        options.auth = shared.auth.map(AuthSettings.init(workerCopyOf:))
        return options
    }

    /// Runs the loop until drained after a shutdown request.
    func run() {
        loop.run()
        context.settings.options.auth?.shared.store.detach()
        context.accessLog?.flush()
    }

    /// Also called while draining, for the connections the kernel completed before the
    /// listener closed: they are served like the rest (with `Connection: close`).
    private func accept(_ fd: Int32, peer: SocketAddress) {
        let settings = context.settings
        if settings.options.proxyProtocol, !settings.rewriter.isTrusted(peer) {
            // Only a listed proxy may say who the client is: anyone else is not read from at all.
            Socket.close(fd)
            context.log.refusedProxyHeader(.untrustedPeer, peer: peer.ipText, detail: "peer not in trusted_proxies")
            return
        }
        let client = ClientConnection(context: context, fd: fd, peer: peer)
        clients[ObjectIdentifier(client)] = client
        if clients.count > peakConnections { peakConnections = clients.count }
        context.metrics.setOpenConnections(clients.count)
        // At `limits.max_connections` stop accepting (as nginx does): newcomers wait in the
        // kernel's backlog until a connection closes, instead of being cut off.
        if clients.count >= maxConnections { listener?.pause() }
    }

    /// An HTTP/1.1 connection that turned out to speak HTTP/2 (the connection preface, or
    /// `h2` by ALPN) gives its socket to `successor`, which takes its place in the count.
    func handOver(from client: ClientConnection, to successor: HTTP2Connection) {
        guard clients.removeValue(forKey: ObjectIdentifier(client)) != nil else { return }
        clients[ObjectIdentifier(successor)] = successor
        context.reaper.retire(client)
    }

    /// Called by a connection when it has closed for good.
    func connectionClosed(_ client: any FrontConnection) {
        if let removed = clients.removeValue(forKey: ObjectIdentifier(client)) {
            context.reaper.retire(removed)
            context.metrics.setOpenConnections(clients.count)
            if peakConnections >= Self.trimAfterPeak, clients.count <= peakConnections / 2 { scheduleTrim() }
            if !context.isDraining, clients.count < maxConnections { listener?.resume() }
        }
        if context.isDraining && clients.isEmpty { finishDrain() }  // with the listener closed, nothing more can come
    }

    /// SIGTERM/SIGINT, as Envoy and nginx drain: stop accepting at once; for a short grace
    /// period keep idle keep-alive connections open and answer every request that arrives
    /// on them, with `Connection: close` (a request the client already sent must not meet a
    /// reset); then close the connections still idle. Busy exchanges finish (each then
    /// closes) until the drain deadline.
    private func beginDrain() {
        guard !context.isDraining else { return }
        context.beginDrain()
        listener?.close()
        for client in Array(clients.values) { client.drain() }
        if clients.isEmpty {
            finishDrain()
            return
        }
        drainDeadline = Timer(loop: loop) { [unowned self] in
            for client in Array(self.clients.values) { client.close() }
            self.finishDrain()
        }
        drainDeadline?.schedule(afterMilliseconds: context.settings.options.shutdownGraceMs)
        idleGraceTimer = Timer(loop: loop) { [unowned self] in
            self.context.drainGraceEnded()
            for client in Array(self.clients.values) { client.closeIfIdle() }
            if self.clients.isEmpty { self.finishDrain() }
        }
        idleGraceTimer?.schedule(afterMilliseconds: min(Self.drainIdleGraceMs, context.settings.options.shutdownGraceMs))
    }

    /// Returning memory after a burst (back within 32 MB of the level before, round
    /// after round). Connection buffers are chains of malloc'd blocks, freed when drained, but
    /// glibc keeps freed heap pages in each thread's arena; `malloc_trim(0)` hands the free
    /// pages of every arena back (madvise), so RSS follows the connections down. It runs once
    /// a burst of at least `trimAfterPeak` connections has halved, a second later (coalesced),
    /// never per request.
    private func scheduleTrim() {
        if trimTimer == nil {
            trimTimer = Timer(loop: loop) { [unowned self] in
                ProcessMemory.trim()
                self.peakConnections = self.clients.count
            }
        }
        if trimTimer?.isScheduled == false { trimTimer?.schedule(afterMilliseconds: 1_000) }
    }

    static let trimAfterPeak = 64
    private var peakConnections = 0
    private var trimTimer: Timer?

    /// How long idle connections stay open after SIGTERM for requests already on their way.
    static let drainIdleGraceMs: Int64 = 1_000
    private var idleGraceTimer: Timer?

    private func finishDrain() {
        forwarder?.stop()
        drainDeadline?.cancel()
        idleGraceTimer?.cancel()
        context.stop()
        loop.stop()
    }
}
