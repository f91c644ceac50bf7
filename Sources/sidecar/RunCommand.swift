import ArgumentParser
import Logging
import SidecarConfig
import SidecarProxy

/// `sidecar run --config sidecar.yaml` (also `sidecar --config …`): serve.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Serve: proxy requests to the upstream behind Sign in with Apple.")

    @Option(name: .long, help: "Path to sidecar.yaml.")
    var config: String = "sidecar.yaml"

    func run() throws {
        let loaded: Config
        do {
            loaded = try Config.load(file: config)
        } catch {
            writeStandardError("sidecar: invalid configuration\n\(error)\n")
            throw ExitCode(1)
        }
        let format: SidecarLogHandler.Format = loaded.log.format == .text ? .text : .json
        let level = Logger.Level(rawValue: loaded.log.level.rawValue) ?? .info
        LoggingSystem.bootstrap { SidecarLogHandler(label: $0, format: format, level: level) }
        let logger = Logger(label: "sidecar")
        for warning in loaded.warnings { logger.warning("\(warning)") }
        let unsupported = FeatureSupport.unsupported(loaded)
        for warning in unsupported.warnings { logger.warning("\(warning)") }
        guard unsupported.errors.isEmpty else {
            for error in unsupported.errors { logger.error("\(config): \(error)") }
            throw ExitCode(1)
        }
        let shared = AuthShared()
        var options = ProxyOptions(loaded)
        do {
            options.auth = try AuthSettings(config: loaded, shared: shared)
        } catch {
            logger.error("invalid configuration", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        do {
            let server = try ProxyServer(options: options, logger: logger)
            let file = config
            server.reload = {
                let reloaded = try Config.load(file: file)
                if let unsupported = FeatureSupport.unsupported(reloaded).errors.first {
                    throw RuntimeFailure(unsupported.description)
                }
                var options = ProxyOptions(reloaded)
                options.auth = try AuthSettings(config: reloaded, shared: shared)
                return options
            }
            try server.run()
        } catch {
            logger.error("cannot serve", metadata: ["error": "\(error)"])
            throw ExitCode(2)
        }
    }
}

extension ProxyOptions {
    /// Maps the typed configuration onto the engine's options.
    init(_ config: Config) {
        self.init()
        listen = config.listen.description
        workers = max(1, config.workers)
        switch config.upstream {
        case .http(let host, let port, let basePath): upstream = .tcp(host: host, port: port, basePath: basePath)
        case .unix(let path): upstream = .unix(path: path)
        }
        upstreamTimeoutMs = config.upstreamTimeout.milliseconds
        upstreamConnectTimeoutMs = config.upstreamConnectTimeout.milliseconds
        preserveHost = config.preserveHost
        routePrefix = config.routes.prefix
        publicPaths = config.access.publicPaths
        apiPaths = config.access.apiPaths
        strippedHeaders = config.headers.identityHeaders + config.headers.strip
        trustedProxies = config.trustedProxies.map(\.description)
        adminListen = config.admin.listen.description
        accessLog = config.log.access
        textLogs = config.log.format == .text
        maxHeaderBytes = config.limits.maxHeaderBytes
        maxUploadBytes = UInt64(max(0, config.limits.maxUploadBytes))
        headerTimeoutMs = config.limits.headerTimeout.milliseconds
        idleTimeoutMs = config.limits.idleTimeout.milliseconds
        maxConnections = config.limits.maxConnections
    }
}
