import Glibc
import Logging
import SidecarConfig
import SidecarEvent

/// Why the proxy could not start (exit 2 in the CLI).
public struct ProxyStartError: Error, CustomStringConvertible {
    public let description: String
}

/// The running proxy: N worker threads each with an event loop and its own SO_REUSEPORT
/// listener, plus a control loop on the calling thread for signals and the admin listener.
public final class ProxyServer {
    private var options: ProxyOptions
    private let logger: Logger
    /// The top-level upstream's address, then each of `upstreams`.
    private let upstreamAddresses: [[SocketAddress]]
    private var listenFDs: [Int32] = []
    private var adminFD: Int32?
    /// The bound public address (its port is the real one when `listen` asked for port 0).
    public let boundAddress: SocketAddress
    /// The bound admin address (health, readiness, metrics), nil without an admin listener.
    public var adminAddress: SocketAddress? { adminFD.flatMap(Socket.localAddress(of:)) }
    /// Reads the configuration again (SIGHUP); its error is logged and the old one kept.
    public var reload: (@Sendable () throws -> ProxyOptions)?
    /// Runs once the workers have ended, before the last log line: where the process's other
    /// threads (ACME's, the store's) are ended and joined, so that none outlives the log.
    public var onStop: (() -> Void)?
    /// Certificates obtained while running (`tls.acme`), for new connections.
    public let certificates: CertificateHandover

    public init(options: ProxyOptions, logger: Logger) throws(ProxyStartError) {
        self.options = options
        self.logger = logger
        SignalWatcher.ignoreSIGPIPE()
        upstreamAddresses = try Self.resolve(options)
        self.options.upstreamTLS = try UpstreamTLSContext.load(options)
        do { certificates = try CertificateHandover() } catch { throw ProxyStartError(description: error.description) }
        let limits = DescriptorLimit.raiseSoftToHard()
        if limits.after.soft != limits.before.soft {
            logger.info("raised the file-descriptor soft limit", metadata: [
                "from": .stringConvertible(limits.before.soft), "to": .stringConvertible(limits.after.soft),
            ])
        }
        let limitsConfig = options.config.limits
        if limitsConfig.maxConnectionsIsDefault {
            if let automatic = DescriptorLimit.automatic(defaultConnections: limitsConfig.maxConnections, limits: limits.after) {
                let metadata: Logger.Metadata = ["limit": .stringConvertible(limits.after.usable)]
                if automatic.warn {
                    logger.warning("\(automatic.message)", metadata: metadata)
                } else if automatic.connections < limitsConfig.maxConnections / 10 * 9 {
                    // Said only when it matters: a default lowered by a few percent (9,936 of
                    // 10,000 under a limit of 20,000) is no news at every start.
                    logger.info("\(automatic.message)", metadata: metadata)
                }
                self.options.config.limits.maxConnections = automatic.connections
            }
        } else if let warning = DescriptorLimit.shortfall(maxConnections: limitsConfig.maxConnections, limits: limits.after) {
            logger.warning("\(warning)")
        }
        do {
            var address = try SocketAddress(parsing: options.config.listen.description)
            let unixPath: String? = if case .unix(let path) = options.config.listen { path } else { nil }
            try Socket.ensureNoListener(on: address, unixPath: unixPath)
            let first = try Socket.listen(on: address, reusePort: address.family != .unix)
            listenFDs.append(first)
            if let actual = Socket.localAddress(of: first), address.family != .unix { address = actual }
            boundAddress = address
            for _ in 1..<max(1, options.config.workers) {
                // Unix sockets have no SO_REUSEPORT: the workers share one socket instead.
                listenFDs.append(address.family == .unix ? dup(first) : try Socket.listen(on: address, reusePort: true))
            }
            let adminAddress = try SocketAddress(parsing: options.config.admin.listen.description)
            try Socket.ensureNoListener(on: adminAddress)
            adminFD = try Socket.listen(on: adminAddress, reusePort: false)
        } catch {
            for fd in listenFDs { Socket.close(fd) }
            throw ProxyStartError(description: Self.explain(error))
        }
    }

    /// Each upstream's servers' addresses, the top-level upstream first.
    private static func resolve(_ options: ProxyOptions) throws(ProxyStartError) -> [[SocketAddress]] {
        var addresses: [[SocketAddress]] = []
        for (index, plan) in options.allUpstreams.enumerated() {
            var servers: [SocketAddress] = []
            for server in plan.servers {
                do {
                    switch server.target {
                    case .http(let host, let port, _), .https(let host, let port, _):
                        if let resolver = options.config.resolver, !HostName.isIPLiteral(host) {
                            // The configured resolver, as every later lookup (`UpstreamNames`).
                            guard let address = UpstreamNames.lookupNow(
                                host, port: port, resolver: resolver, timeoutMs: plan.connectTimeoutMs).first
                            else { throw EventError.address("\(host) does not resolve with resolver \(resolver)") }
                            servers.append(address)
                        } else {
                            servers.append(try SocketAddress(host: host, port: port))
                        }
                    case .unix(let path): servers.append(try SocketAddress(unixPath: path))
                    }
                } catch {
                    throw ProxyStartError(description: index == 0 ? "upstream: \(error)"
                        : "upstreams.\(options.upstreamName(index)): \(error)")
                }
            }
            addresses.append(servers)
        }
        return addresses
    }

    private static func explain(_ error: EventError) -> String {
        if case .system(let what, let code) = error, code == EADDRINUSE {
            return "\(what): address already in use (another process is listening on it — perhaps another sidecar)"
        }
        return error.description
    }

    /// Serves until SIGTERM/SIGINT, then drains (up to `shutdownGraceMs`) and returns.
    public func run() throws(ProxyStartError) {
        let control: EventLoop
        do { control = try EventLoop() } catch { throw ProxyStartError(description: error.description) }
        let readiness = Readiness(workers: listenFDs.count)
        let sink = LogSink(fd: 1)
        let workersDone: WakeupChannel
        var shutdownChannels: [WakeupChannel] = []
        var reloadChannels: [WakeupChannel] = []
        let settings = SharedSettings(options, upstreams: upstreamAddresses)
        let board = MetricsBoard(workers: listenFDs.count)
        let exporter = SpanExporter(workers: listenFDs.count, version: options.version)
        board.setSiteNames(options.config.sites.map(\.name))
        do {
            try exporter.configure(endpoint: options.config.tracing.otlpEndpoint, caFile: options.config.tracing.otlpCAFile)
        } catch {
            throw ProxyStartError(description: error.description)
        }
        do {
            workersDone = try WakeupChannel()
            for _ in listenFDs {
                shutdownChannels.append(try WakeupChannel())
                reloadChannels.append(try WakeupChannel())
            }
        } catch {
            throw ProxyStartError(description: error.description)
        }

        var admin: AdminServer?
        if let adminFD {
            admin = AdminServer(loop: control, fd: adminFD, options: options, readiness: readiness,
                                metrics: board, upstreams: ReadinessTarget.all(options, addresses: upstreamAddresses),
                                spans: exporter, listener: adminAddress)
        }
        var running = listenFDs.count
        let doneWatcher = Wakeup(loop: control, channel: workersDone, counting: { finished in
            running -= Int(finished)
            if running <= 0 { control.stop() }
        })
        var stopping = false
        let onSignal: (Int32) -> Void = { [logger] signal in
            guard !stopping else { return }
            stopping = true
            logger.info("shutting down", metadata: ["signal": "\(signal)"])
            admin?.close()
            for channel in shutdownChannels { channel.notify() }
        }
        let startOptions = options
        let hangUp = SignalWatcher(loop: control, signal: SIGHUP) { [logger, reload] _ in
            guard !stopping, let reload else { return }
            do {
                var new = try reload()
                let addresses = try Self.resolve(new)
                new.upstreamTLS = try UpstreamTLSContext.load(new)
                let (started, loaded) = (startOptions.config, new.config)
                if loaded.listen != started.listen || loaded.workers != started.workers
                    || loaded.admin != started.admin || loaded.log.format != started.log.format {
                    logger.warning("listen, workers, admin.listen, admin.token and log.format changes take effect on restart")
                }
                // Application lines keep the format they started with: access lines must match.
                new.config.log.format = started.log.format
                // The listener's protocol stays what it started as; a new certificate and key
                // (already read and checked) serve new connections from now on.
                if (new.tls == nil) != (startOptions.tls == nil) {
                    logger.warning("turning tls on or off takes effect on restart")
                    new.tls = settings.current.0.tls
                    new.scheme = startOptions.scheme
                } else if let tls = new.tls {
                    logger.info("tls certificate loaded", metadata: ["certificate": "\(tls.summary)"])
                }
                try exporter.configure(endpoint: loaded.tracing.otlpEndpoint, caFile: loaded.tracing.otlpCAFile)
                if addresses != settings.current.1 { readiness.forgetUpstreams() }
                settings.replace(new, upstreams: addresses)
                let targets = ReadinessTarget.all(new, addresses: addresses)
                readiness.resolvedNames.keep(only: ReadinessTarget.names(targets))
                admin?.upstreams = targets
                board.setSiteNames(new.config.sites.map(\.name))
                for channel in reloadChannels { channel.notify() }
                logger.info("configuration reloaded")
            } catch {
                logger.error("reload failed; keeping the previous configuration", metadata: ["error": "\(error)"])
            }
        }
        // A certificate renewed by ACME (from its thread): taken in as SIGHUP takes a new pair.
        let certificateWatcher = Wakeup(loop: control, channel: certificates.channel) { [logger, certificates] in
            guard !stopping, let tls = certificates.take() else { return }
            var (current, addresses) = settings.current
            current.tls = tls
            settings.replace(current, upstreams: addresses)
            for channel in reloadChannels { channel.notify() }
            logger.info("tls certificate loaded", metadata: ["certificate": "\(tls.summary)"])
        }
        let term = SignalWatcher(loop: control, signal: SIGTERM, handler: onSignal)
        let interrupt = SignalWatcher(loop: control, signal: SIGINT, handler: onSignal)

        var threads: [WorkerThread] = []
        for (index, fd) in listenFDs.enumerated() {
            let shutdown = shutdownChannels[index]
            let reloaded = reloadChannels[index]
            let logger = self.logger
            do {
                threads.append(try WorkerThread {
                    do {
                        let worker = try Worker(
                            index: index, settings: settings, listenFD: fd, readiness: readiness,
                            board: board, spans: exporter.queues[index], logSink: sink, shutdown: shutdown, reload: reloaded)
                        worker.run()
                    } catch {
                        logger.error("worker failed to start", metadata: ["error": "\(error)"])
                    }
                    workersDone.notify()
                })
            } catch {
                throw ProxyStartError(description: error.description)
            }
        }
        _ = ProcessMetrics.startTime
        logger.info("listening", metadata: [
            "address": "\(boundAddress)", "workers": .stringConvertible(listenFDs.count), "version": "\(options.version)",
            // The bound address: a configured port 0 (the demo, tests) is the one the kernel chose.
            "admin": "\(adminAddress.map { "\($0)" } ?? options.config.admin.listen.description)", "tls": "\(options.tls?.summary ?? "off")",
            "sends": "\(EventLoop.batchedSendsAvailable ? "io_uring" : "plain")",
        ])
        control.run()
        for thread in threads { thread.join() }
        exporter.stop()
        onStop?()
        withExtendedLifetime((term, interrupt, hangUp, doneWatcher, admin, certificateWatcher)) {}
        logger.info("stopped")
    }
}
