import SidecarConfig
import SidecarProxy

/// Everything `sidecar run` (at start and on SIGHUP) derives from a configuration file before
/// it serves, and what `sidecar check` validates: one code path, so `check` can never pass a
/// file that `run` refuses, and both refuse it in the same words.
struct ServingConfiguration {
    let config: Config
    let options: ProxyOptions
    /// Loads but probably is not what was meant: `check` prints them, `run` logs them.
    let warnings: [String]

    /// Why the file cannot be served; each line starts with the file (and, where the config
    /// reader knows them, line, column and key path).
    struct Refusal: Error, CustomStringConvertible {
        let lines: [String]
        var description: String { lines.joined(separator: "\n") }
    }

    /// Reads `file` (resolving secrets and reading key files), refuses what this build lacks,
    /// and builds the sign-in settings exactly as serving them would.
    static func load(file: String, shared: AuthShared) throws(Refusal) -> ServingConfiguration {
        let config: Config
        do {
            config = try Config.load(file: file)
        } catch {
            throw Refusal(lines: error.errors.map(\.description))
        }
        let unsupported = FeatureSupport.unsupported(config)
        guard unsupported.errors.isEmpty else {
            throw Refusal(lines: unsupported.errors.map { "\(file): \($0)" })
        }
        var options = ProxyOptions(config)
        do {
            options.auth = try AuthSettings(config: config, shared: shared)
        } catch {
            throw Refusal(lines: ["\(file): \(error)"])
        }
        let warnings = config.warnings.map(\.description) + unsupported.warnings.map(\.description)
        return ServingConfiguration(config: config, options: options, warnings: warnings)
    }
}
