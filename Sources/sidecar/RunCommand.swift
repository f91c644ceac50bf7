import Foundation
import ArgumentParser
import Logging
import SidecarConfig
import SidecarHTTP
import SidecarProxy
import SidecarStore

/// `sidecar run --config sidecar.yaml` (also `sidecar --config …`): serve.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Serve: proxy requests to the upstream behind Sign in with Apple.",
        discussion: """
            The default command: `sidecar --config F` is `sidecar run --config F`.
            Loads the file exactly as `sidecar check` does (SIDECAR_* variables
            override its keys), opens revocations.store, then serves on `listen`
            and, on admin.listen (default 127.0.0.1:9090, keep it private),
            answers /healthz, /readyz and /metrics. Logs go to stderr, one line
            per event (log.format, log.level).

            SIGNALS
              SIGHUP           reload the configuration, TLS certificate,
                               assertion key and page templates without
                               dropping a request; a file that fails keeps
                               the running one
              SIGTERM, SIGINT  stop accepting, answer what is in flight
                               (up to 11 s), exit 0

            EXIT STATUS
              0 stopped by a signal; 1 invalid configuration or usage (file,
              key, line and column are named); 2 a runtime failure (a port in
              use, a worker that cannot start)
            """)

    @Option(name: .long, help: ArgumentHelp(
        "Path to sidecar.yaml, or none to take every setting from SIDECAR_* variables (which override the file's keys).",
        valueName: "file"))
    var config: String = "sidecar.yaml"

    func run() throws {
        var opened: AuthShared?
        let storeLog = StoreReadinessLog()
        let prepared: ServingConfiguration
        do {
            prepared = try ServingConfiguration.load(file: config) { loaded throws(ServingConfiguration.Refusal) in
                // The store is opened once, here: a reload keeps it and what it holds.
                let spec = StoreSpec(loaded.revocations)
                do {
                    let store = try openStore(
                        spec, limits: StoreLimits(loaded.revocations),
                        onReadinessChange: { ready, reason in storeLog.report(.readiness(ready, reason)) },
                        onNotice: { notice in storeLog.report(.notice(notice)) })
                    let shared = AuthShared(store: store, writesAssertionKeys: true)
                    opened = shared
                    return shared
                } catch {
                    throw .init(lines: ["\(ServingConfiguration.label(config)): revocations.store: \(error)"])
                }
            }
        } catch {
            writeStandardError("sidecar: invalid configuration\n\(error)\n")
            throw ExitCode(1)
        }
        let loaded = prepared.config
        let format: SidecarLogHandler.Format = loaded.log.format == .text ? .text : .json
        let level = Logger.Level(rawValue: loaded.log.level.rawValue) ?? .info
        LoggingSystem.bootstrap { SidecarLogHandler(label: $0, format: format, level: level) }
        let logger = Logger(label: "sidecar")
        storeLog.start()
        for warning in prepared.warnings { logger.warning("\(warning)") }
        for note in prepared.options.auth?.assertionNotes ?? [] { logger.notice("\(note)") }
        guard let shared = opened else { throw ExitCode(1) }
        let store = shared.store
        if let created = store.createdFile { logger.info("store: created store file \(created)") }
        for note in store.openingNotes { logger.warning("store: \(note)") }
        logger.info("store opened", metadata: [
            "store": "\(store.health.location)", "durable": .stringConvertible(store.health.durable),
        ])
        let startStore = prepared.config.revocations
        var options = prepared.options
        var acme: ACMEServing?
        do {
            // Before the proxy binds: the HTTP-01 port and the first certificate are start-up matters.
            if let settings = loaded.acme { acme = try ACMEServing(config: loaded, acme: settings, store: store) }
        } catch {
            logger.error("cannot serve", metadata: ["error": "\(error)"])
            throw ExitCode(2)
        }
        if let acme {
            options.tls = acme.context
            options.certificateReport = acme.report
        }
        let managed = acme
        // The threads that use OpenSSL beside the workers end before exit() runs OpenSSL's
        // cleanup: one still signing or handshaking then would read freed memory. (Both calls
        // do nothing the second time: the server calls this as it stops, the defer on any exit.)
        let endThreads = {
            managed?.manager.stop()
            store.close()
        }
        defer { endThreads() }
        do {
            let server = try ProxyServer(options: options, logger: logger)
            let file = config
            server.reload = {
                // Exactly what `check` and the start above do; a refusal keeps the old config.
                let reloaded = try ServingConfiguration.load(file: file, shared: shared)
                if reloaded.config.revocations != startStore {
                    logger.warning("revocations.store changes take effect on restart; keeping \(startStore.store)")
                }
                for note in reloaded.options.auth?.assertionNotes ?? [] { logger.notice("\(note)") }
                var options = reloaded.options
                if let acme = managed {
                    // tls.acme changes take effect on restart; the managed certificate stays.
                    options.tls = acme.context
                    options.certificateReport = acme.report
                }
                return options
            }
            server.onStop = endThreads
            try managed?.start(serving: server)
            try server.run()
        } catch {
            logger.error("cannot serve", metadata: ["error": "\(error)"])
            throw ExitCode(2)
        }
    }
}

/// A shared store's readiness changes and notices, reported from the store's own thread — possibly
/// before the log is set up (the open waits for the first outcome): held until `start`.
final class StoreReadinessLog: @unchecked Sendable {
    private let lock = NSLock()
    enum Entry {
        case readiness(Bool, String)
        /// Behind Sentinel: where the master is, and each move of it.
        case notice(String)
    }

    private var held: [Entry] = []
    private var started = false

    func report(_ entry: Entry) {
        lock.lock()
        guard started else {
            held.append(entry)
            lock.unlock()
            return
        }
        lock.unlock()
        write(entry)
    }

    func start() {
        lock.lock()
        started = true
        let earlier = held
        held = []
        lock.unlock()
        for entry in earlier { write(entry) }
    }

    private func write(_ entry: Entry) {
        let logger = Logger(label: "sidecar.store")
        guard case .readiness(let ready, let reason) = entry else {
            if case .notice(let text) = entry { logger.notice("store: \(text)") }
            return
        }
        if ready {
            logger.info("store ready")
        } else {
            logger.error("store unavailable: steps needing a single-use check answer 503 until it is back",
                         metadata: ["reason": "\(reason)"])
        }
    }
}
