import Logging
import SidecarEvent
import SidecarHTTP

/// Where connections end: the worker keeps them in its table (descriptor accounting, drain)
/// and in-process tests keep their own.
protocol ConnectionRegistry: AnyObject {
    /// A connection has closed for good.
    func connectionClosed(_ client: any FrontConnection)
    /// An HTTP/1.1 connection that turned out to speak HTTP/2 gives its place to `successor`.
    func handOver(from client: ClientConnection, to successor: HTTP2Connection)
}

/// What a worker's connections and their exchanges reach of it, and nothing else: its loop and
/// clock, the settings generation in force, the sign-in machinery, the upstream pools, the
/// per-loop scratch buffers, id generators, the access log and the operator's rate-limited
/// lines. One per worker, shared by its connections; the worker keeps the listener, the
/// connection table, the drain and the reload, and replaces the settings through `apply`.
final class ConnectionContext {
    let loop: EventLoop
    /// `loop`, unretained (the context holds it for its whole life): a call through `loop`
    /// from a connection (two loads deep) is retained and released around it.
    private let loopRef: Unmanaged<EventLoop>
    let metrics: MetricsRecorder
    let readiness: Readiness
    let reaper: Reaper
    let upstreams: UpstreamPools
    let scratch = ScratchBuffers()
    let log: OperatorLog
    /// This worker's spans on their way to the process's exporter thread.
    let spans: SpanQueue
    /// Trace and span ids. Behind a pointer the context owns: a connection draws through it
    /// with a plain load, where calling into a class retains and releases it each time.
    let traceIDs: UnsafeMutablePointer<TraceIDGenerator>
    let upstreamHeadLimits = HTTPHeadLimits(maxHeadBytes: 64 * 1024, maxFields: 200)
    unowned let registry: any ConnectionRegistry
    private let logSink: LogSink

    private(set) var settings: ExchangeSettings
    /// Sessions and the sign-in endpoints; nil when `settings.options.auth` is.
    private(set) var auth: Authenticator?
    private(set) var accessLog: AccessLog?
    var requestIDs = RequestIDGenerator()
    /// `tracing.max_incoming_sampled_per_second`, this worker's share.
    var incomingSampled = SampledTraceBudget(perSecond: 0, nowMs: nil)
    /// A graceful shutdown began: every later exchange ends with `Connection: close`.
    private(set) var isDraining = false
    /// The drain's grace period is over: an exchange that ends closes its connection.
    private(set) var drainIdleGraceOver = false

    /// Creates the sign-in machinery of `options` (which can fail: its keys, its store).
    init(
        loop: EventLoop, options: ProxyOptions, upstreamAddresses: [[SocketAddress]], metrics: MetricsRecorder,
        readiness: Readiness, spans: SpanQueue, logSink: LogSink, registry: any ConnectionRegistry, upstreamLimit: Int
    ) throws {
        self.loop = loop
        loopRef = .passUnretained(loop)
        self.metrics = metrics
        self.readiness = readiness
        self.spans = spans
        self.logSink = logSink
        self.registry = registry
        traceIDs = .allocate(capacity: 1)
        traceIDs.initialize(to: TraceIDGenerator())
        reaper = Reaper(loop: loop)
        log = OperatorLog(loop: loop, metrics: metrics)
        upstreams = UpstreamPools(
            loop: loop, reaper: reaper, limit: upstreamLimit, labels: metrics.serverLabels, readiness: readiness)
        if let settings = options.auth {
            auth = try Authenticator(loop: loop, settings: settings, upstreamTimeoutMs: options.upstreamTimeoutMs, metrics: metrics)
        } else {
            metrics.reportAppleKeys(.notNeeded)
        }
        settings = ExchangeSettings(options: options, auth: auth)
        upstreams.apply(options, addresses: upstreamAddresses)
        applyLogsAndTracing(options)
    }

    deinit {
        traceIDs.deinitialize(count: 1)
        traceIDs.deallocate()
    }

    var nowMs: Int64 { loopRef._withUnsafeGuaranteedRef { $0.nowMilliseconds } }
    func refreshedNowMs() -> Int64 { loopRef._withUnsafeGuaranteedRef { $0.refreshedNowMilliseconds() } }

    /// SIGHUP: the reloaded settings, for the requests that begin from now on. Connections keep
    /// running; a new upstream address gets a new pool (the old one's idle connections close;
    /// busy ones finish and close).
    func apply(_ options: ProxyOptions, upstreamAddresses: [[SocketAddress]]) {
        applyAuth(options)
        settings = ExchangeSettings(options: options, auth: auth)
        upstreams.apply(options, addresses: upstreamAddresses)
        accessLog?.flush()
        applyLogsAndTracing(options)
    }

    private func applyAuth(_ new: ProxyOptions) {
        do {
            if let settings = new.auth {
                if let auth {
                    try auth.apply(settings)
                } else {
                    auth = try Authenticator(loop: loop, settings: settings, upstreamTimeoutMs: new.upstreamTimeoutMs, metrics: metrics)
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

    private func applyLogsAndTracing(_ options: ProxyOptions) {
        let config = options.config
        accessLog = config.log.access
            ? AccessLog(loop: loop, sink: logSink, format: config.log.format == .text ? .text : .json,
                        redaction: QueryRedaction(extra: config.log.redactQuery))
            : nil
        incomingSampled.resize(perSecond: Double(config.tracing.maxIncomingSampledPerSecond) / Double(max(1, config.workers)))
        auth?.spans = settings.exportsSpans ? SpanSink(queue: spans, ids: traceIDs) : nil
    }

    /// Shutdown begins (see `Worker.beginDrain`): pools retire, exchanges end with `close`.
    func beginDrain() {
        isDraining = true
        upstreams.retireAll()
    }

    func drainGraceEnded() { drainIdleGraceOver = true }

    /// The worker stops: what is buffered is written, the sign-in machinery stops.
    func stop() {
        auth?.stop()
        accessLog?.flush()
    }
}
