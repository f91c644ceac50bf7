import Glibc
import Logging
import SidecarConfig
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// One event loop on one thread with its own listening socket (SO_REUSEPORT), its own
/// upstream pool, access-log buffer and request-id generator. Nothing mutable is shared
/// with other workers.
final class Worker {
    let loop: EventLoop
    /// `loop`, unretained (the worker holds it for its whole life).
    let loopRef: Unmanaged<EventLoop>
    private(set) var options: ProxyOptions
    private(set) var policy: AccessPolicy
    private(set) var rewriter: RequestRewriter
    /// Sessions and the sign-in endpoints; nil when `options.auth` is.
    private(set) var auth: Authenticator?
    let readiness: Readiness
    private(set) var headLimits: HTTPHeadLimits
    let upstreamHeadLimits = HTTPHeadLimits(maxHeadBytes: 64 * 1024, maxFields: 200)
    /// The top-level upstream first, then `upstreams` in order: a pool per server each.
    private(set) var upstreams: [UpstreamGroup] = []
    private(set) var reaper: Reaper
    /// The upstream connections this worker may have open, all pools together, and the
    /// exchanges waiting for one (`UpstreamAdmission`).
    let upstreamBudget: UpstreamBudget
    private(set) var accessLog: AccessLog?
    var requestIDs = RequestIDGenerator()
    /// Trace and span ids. Behind a pointer the worker owns: a connection draws through it
    /// with a plain load, where calling into the worker retains and releases it each time.
    let traceIDs: UnsafeMutablePointer<TraceIDGenerator> = {
        let pointer = UnsafeMutablePointer<TraceIDGenerator>.allocate(capacity: 1)
        pointer.initialize(to: TraceIDGenerator())
        return pointer
    }()
    /// `options.traceTrustIncoming`, read on every request without going through `options`.
    private(set) var trustIncomingTrace = true
    /// This worker's spans on their way to the process's exporter thread.
    let spanQueue: SpanQueue
    /// Sampled exchanges record spans (`tracing.otlp_endpoint` is set).
    private(set) var exportsSpans = false
    /// `TraceContext.samplingThreshold` of `tracing.sample_ratio`, for the traces started here.
    private(set) var sampleThreshold: UInt64 = .max
    /// `tracing.max_incoming_sampled_per_second`, this worker's share.
    var incomingSampled = SampledTraceBudget(perSecond: 0, nowMs: nil)
    /// Scratch buffers for composing heads (never used re-entrantly).
    var lineScratch = ByteBuilder()
    /// Arrays of heads this loop is done with, refilled by its next parses (no allocation
    /// per message). Bounded: at most `spareHeadLimit` kept, none larger than 8 KiB.
    private var spareHeads: [HeadArrays] = []
    private static let spareHeadLimit = 64
    private var listener: Listener?
    private var clients: [ObjectIdentifier: any FrontConnection] = [:]
    private let maxConnections: Int
    private(set) var isDraining = false
    private var drainDeadline: Timer?
    private var shutdownWakeup: Wakeup?
    private var reloadWakeup: Wakeup?
    private let settings: SharedSettings
    private let logSink: LogSink
    private var upstreamFailureLog = RateLimitedLog(intervalMs: 10_000)
    /// Connections refused before their PROXY protocol header was read (`proxy_protocol`).
    private var proxyHeaderRefusalLog = RateLimitedLog(intervalMs: 10_000)
    private var http2RefusalLog = RateLimitedLog(intervalMs: 10_000)
    /// Request paths refused before any decision (an encoded slash, a bad escape).
    var pathRefusalLog = RateLimitedLog(intervalMs: 10_000)
    let metrics: MetricsRecorder
    /// Delivers queued account events to `notifications.forward_to`; on worker 0 only.
    private var forwarder: NotificationForwarder?

    /// Output queued above this stops reading the other side until it drains (backpressure).
    /// One read (up to `EventLoop.readScratchSize`) lands on top of it, so this is
    /// `limits.response_buffer` less one read: what an exchange holds for a slow side stays
    /// within the configured bound in each direction (with the 64 KiB default, the other side
    /// is read only when nothing is queued: the kernel's socket buffers do the buffering).
    private(set) var holdLimit = 0

    init(
        index: Int, settings: SharedSettings, listenFD: Int32, readiness: Readiness,
        board: MetricsBoard, spans: SpanQueue, logSink: LogSink, shutdown: WakeupChannel, reload: WakeupChannel
    ) throws(EventError) {
        let (sharedOptions, upstreamAddresses) = settings.current
        let options = Self.workerCopy(of: sharedOptions)
        self.settings = settings
        self.logSink = logSink
        loop = try EventLoop()
        loopRef = .passUnretained(loop)
        self.options = options
        spanQueue = spans
        trustIncomingTrace = options.config.tracing.trustIncoming
        // Before anything on this loop asks the store (the forwarder does at once).
        options.auth?.shared.store.attach(to: loop)
        metrics = MetricsRecorder(loop: loop, board: board, readiness: readiness, worker: index)
        if let settings = options.auth {
            do {
                auth = try Authenticator(
                    loop: loop, settings: settings, upstreamTimeoutMs: options.upstreamTimeoutMs, metrics: metrics)
            } catch {
                throw .libevent(error.description)
            }
        } else {
            metrics.reportAppleKeys(.notNeeded)
        }
        policy = AccessPolicy(options: options, auth: auth)
        rewriter = RequestRewriter(options: options)
        if index == 0, let settings = options.auth {
            forwarder = NotificationForwarder(loop: loop, settings: settings, metrics: metrics)
        }
        self.readiness = readiness
        headLimits = HTTPHeadLimits(maxHeadBytes: options.maxHeaderBytes)
        maxConnections = max(1, options.config.limits.maxConnections / max(1, options.config.workers))
        reaper = Reaper(loop: loop)
        upstreamBudget = UpstreamBudget(loop: loop, limit: maxConnections)
        applyUpstreams(options, addresses: upstreamAddresses)
        if options.config.log.access { accessLog = Self.accessLog(options, loop: loop, sink: logSink) }
        holdLimit = Self.holdLimit(options)
        listener = Listener(loop: loop, fd: listenFD) { [unowned self] fd, peer in
            self.accept(fd, peer: peer)
        }
        listener?.onDescriptorsExhausted = { [unowned self] code in
            DescriptorGuard.exhausted(self, errno: code, clients: Array(self.clients.values))
        }
        shutdownWakeup = Wakeup(loop: loop, channel: shutdown) { [unowned self] in self.beginDrain() }
        reloadWakeup = Wakeup(loop: loop, channel: reload) { [unowned self] in self.applySettings() }
        applyTracing(options)
        upstreamBudget.pass = { [unowned self] in self.admitUpstreamWaiters() }
    }

    deinit {
        traceIDs.deinitialize(count: 1)
        traceIDs.deallocate()
    }

    /// SIGHUP: take the reloaded settings. Connections keep running; new requests see the
    /// new policy, rules, header rules, limits and timeouts. A new upstream address gets a
    /// new pool (the old one's idle connections close; busy ones finish and close).
    private func applySettings() {
        let (sharedOptions, addresses) = settings.current
        let options = Self.workerCopy(of: sharedOptions)
        // A new certificate: HTTP/2 clients would keep their connections (and the old
        // certificate) for as long as they like; GOAWAY sends them to a new one, after the
        // streams in progress finish.
        if let tls = options.tls, tls !== self.options.tls {
            for case let connection as HTTP2Connection in clients.values { connection.drain() }
        }
        applyAuth(options)
        self.options = options
        trustIncomingTrace = options.config.tracing.trustIncoming
        applyTracing(options)
        policy = AccessPolicy(options: options, auth: auth)
        rewriter = RequestRewriter(options: options)
        headLimits = HTTPHeadLimits(maxHeadBytes: options.maxHeaderBytes)
        applyUpstreams(options, addresses: addresses)
        holdLimit = Self.holdLimit(options)
        accessLog?.flush()
        accessLog = options.config.log.access ? Self.accessLog(options, loop: loop, sink: logSink) : nil
    }

    private static func accessLog(_ options: ProxyOptions, loop: EventLoop, sink: LogSink) -> AccessLog {
        AccessLog(loop: loop, sink: sink, format: options.config.log.format == .text ? .text : .json,
                  redaction: QueryRedaction(extra: options.config.log.redactQuery))
    }

    /// The options with this worker's own copy of the sign-in settings, which the request
    /// path reads (`AuthSettings(workerCopyOf:)`: no object that every worker writes).
    static func workerCopy(of shared: ProxyOptions) -> ProxyOptions {
        var options = shared
        options.auth = shared.auth.map(AuthSettings.init(workerCopyOf:))
        return options
    }

    private func applyTracing(_ options: ProxyOptions) {
        exportsSpans = options.config.tracing.otlpEndpoint != nil
        sampleThreshold = TraceContext.samplingThreshold(ratio: options.config.tracing.sampleRatio)
        incomingSampled.resize(perSecond: Double(options.config.tracing.maxIncomingSampledPerSecond) / Double(max(1, options.config.workers)))
        auth?.spans = exportsSpans ? SpanSink(queue: spanQueue, ids: traceIDs) : nil
    }

    /// The upstreams' servers and pools, kept across a reload where they stay the same.
    private func applyUpstreams(_ options: ProxyOptions, addresses: [[SocketAddress]]) {
        upstreams = UpstreamGroup.rebuild(
            upstreams, options: options, addresses: addresses, loop: loop, reaper: reaper, budget: upstreamBudget)
        upstreamTimeoutsMs = options.allUpstreams.map(\.timeoutMs)
    }

    /// Each upstream's `upstream_timeout`, read per exchange without touching its pool (a
    /// class reference taken from an array is retained and released at every read).
    private(set) var upstreamTimeoutsMs: [Int64] = []

    @inline(__always) func upstreamTimeoutMs(_ index: Int) -> Int64 {
        index < upstreamTimeoutsMs.count ? upstreamTimeoutsMs[index] : options.upstreamTimeoutMs
    }

    /// Upstream `index`; nil when a reload left fewer upstreams than the rule that chose it
    /// knew (the exchange then fails with 502 rather than go elsewhere).
    @inline(__always) func upstream(_ index: Int) -> UpstreamGroup? {
        index < upstreams.count ? upstreams[index] : nil
    }

    private func applyAuth(_ new: ProxyOptions) {
        if let settings = new.auth { forwarder?.apply(settings) }
        do {
            if let settings = new.auth {
                if let auth {
                    try auth.apply(settings)
                } else {
                    auth = try Authenticator(
                        loop: loop, settings: settings, upstreamTimeoutMs: new.upstreamTimeoutMs, metrics: metrics)
                }
            } else {
                auth?.stop()
                auth = nil
                metrics.reportAppleKeys(.notNeeded)
            }
        } catch {
            Logger(label: "sidecar").error("reload: sign-in settings not applied; keeping the previous ones", metadata: ["error": "\(error)"])
        }
    }

    /// Runs the loop until drained after a shutdown request.
    func run() {
        loop.run()
        options.auth?.shared.store.detach()
        accessLog?.flush()
    }

    /// Through `loopRef`: a call through `loop` from a connection (`worker.loop`, two loads
    /// deep) is retained and released around it.
    var nowMs: Int64 { loopRef._withUnsafeGuaranteedRef { $0.nowMilliseconds } }
    func refreshedNowMs() -> Int64 { loopRef._withUnsafeGuaranteedRef { $0.refreshedNowMilliseconds() } }

    /// Also called while draining, for the connections the kernel completed before the
    /// listener closed: they are served like the rest (with `Connection: close`).
    private func accept(_ fd: Int32, peer: SocketAddress) {
        if options.proxyProtocol, !rewriter.isTrusted(peer) {
            // Only a listed proxy may say who the client is: anyone else is not read from at all.
            Socket.close(fd)
            refusedProxyHeader(.untrustedPeer, peer: peer.ipText, detail: "peer not in trusted_proxies")
            return
        }
        let client = ClientConnection(worker: self, fd: fd, peer: peer)
        clients[ObjectIdentifier(client)] = client
        if clients.count > peakConnections { peakConnections = clients.count }
        metrics.setOpenConnections(clients.count)
        // At `limits.max_connections` stop accepting (as nginx does): newcomers wait in the
        // kernel's backlog until a connection closes, instead of being cut off.
        if clients.count >= maxConnections { listener?.pause() }
    }

    /// Arrays for the next head parsed on this loop.
    func spareHead() -> HeadArrays { spareHeads.popLast() ?? HeadArrays() }

    /// Keeps the arrays of a finished head (or unused spares) for a later parse.
    func recycle(_ arrays: HeadArrays) {
        guard spareHeads.count < Self.spareHeadLimit, arrays.capacity <= 8192 else { return }
        spareHeads.append(arrays)
    }

    /// An HTTP/1.1 connection that turned out to speak HTTP/2 (the connection preface, or
    /// `h2` by ALPN) gives its socket to `successor`, which takes its place in the count.
    func handOver(from client: ClientConnection, to successor: HTTP2Connection) {
        guard clients.removeValue(forKey: ObjectIdentifier(client)) != nil else { return }
        clients[ObjectIdentifier(successor)] = successor
        reaper.retire(client)
    }

    /// Called by a connection when it has closed for good.
    func connectionClosed(_ client: any FrontConnection) {
        if let removed = clients.removeValue(forKey: ObjectIdentifier(client)) {
            reaper.retire(removed)
            metrics.setOpenConnections(clients.count)
            if peakConnections >= Self.trimAfterPeak, clients.count <= peakConnections / 2 { scheduleTrim() }
            if !isDraining, clients.count < maxConnections { listener?.resume() }
        }
        if isDraining && clients.isEmpty { finishDrain() }  // with the listener closed, nothing more can come
    }

    /// SIGTERM/SIGINT, as Envoy and nginx drain: stop accepting at once; for a short grace
    /// period keep idle keep-alive connections open and answer every request that arrives
    /// on them, with `Connection: close` (a request the client already sent must not meet a
    /// reset); then close the connections still idle. Busy exchanges finish (each then
    /// closes) until the drain deadline.
    private func beginDrain() {
        guard !isDraining else { return }
        isDraining = true
        listener?.close()
        for pool in upstreams { pool.retire() }
        for client in Array(clients.values) { client.drain() }
        if clients.isEmpty {
            finishDrain()
            return
        }
        drainDeadline = Timer(loop: loop) { [unowned self] in
            for client in Array(self.clients.values) { client.close() }
            self.finishDrain()
        }
        drainDeadline?.schedule(afterMilliseconds: options.shutdownGraceMs)
        idleGraceTimer = Timer(loop: loop) { [unowned self] in
            self.drainIdleGraceOver = true
            for client in Array(self.clients.values) { client.closeIfIdle() }
            if self.clients.isEmpty { self.finishDrain() }
        }
        idleGraceTimer?.schedule(afterMilliseconds: min(Self.drainIdleGraceMs, options.shutdownGraceMs))
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
    /// After it, a connection whose exchange ends closes instead of waiting for another request.
    private(set) var drainIdleGraceOver = false

    /// A failure to reach the upstream, logged as nginx does (address, errno) at most once
    /// per interval per worker, with the number of failures not logged in between.
    /// Counts a connection closed for its PROXY protocol header and logs it (at most one line
    /// per interval: a scanner can open connections faster than anyone reads the log). One
    /// the peer closed itself is only counted: a balancer's TCP health check does just that.
    func refusedProxyHeader(_ reason: ProxyHeaderRefusal, peer: String, detail: String) {
        metrics.recordProxyHeaderRefusal(reason)
        guard reason != .closed, let suppressed = proxyHeaderRefusalLog.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = ["peer": "\(peer)", "reason": "\(reason.label)"]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").info("connection closed before its PROXY protocol header was read: \(detail)",
                                      metadata: metadata)
    }

    /// An HTTP/2 connection ended for exceeding a bound: logged at most once per interval.
    func logHTTP2Refusal(_ reason: H2Session.Refusal, peer: [UInt8]) {
        guard let suppressed = http2RefusalLog.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = [
            "peer": "\(String(decoding: peer, as: UTF8.self))", "reason": "\(reason.rawValue)",
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").warning("HTTP/2 connection ended with GOAWAY (ENHANCE_YOUR_CALM)", metadata: metadata)
    }

    func logUpstreamFailure(_ stage: StaticString, errno code: Int32, upstream: UpstreamPool?) {
        guard let suppressed = upstreamFailureLog.shouldLog(nowMs: nowMs) else { return }
        var metadata: Logger.Metadata = [
            "upstream": "\(String(decoding: upstream?.text ?? [], as: UTF8.self))",
            "upstream_name": "\(upstream?.name ?? "default")",
            "errno": .stringConvertible(code),
            "error": "\(String(cString: strerror(code)))",
        ]
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").error("upstream \(stage) failed (\(code): \(String(cString: strerror(code))))", metadata: metadata)
    }

    var upstreamBusyLog = RateLimitedLog(intervalMs: 10_000)

    private static func holdLimit(_ options: ProxyOptions) -> Int {
        max(0, options.responseBufferBytes - EventLoop.readScratchSize)
    }

    private func finishDrain() {
        forwarder?.stop()
        drainDeadline?.cancel()
        idleGraceTimer?.cancel()
        auth?.stop()
        accessLog?.flush()
        loop.stop()
    }
}
