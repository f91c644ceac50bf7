/// The sidecar's version, for `sidecar --version`, the start-up log line, the
/// `sidecar_build_info` metric and the User-Agent sent to Apple. Here, in the lowest module
/// the CLI, the proxy and the Apple client all import (the HTTP codec), so they cannot
/// disagree and the Apple client needs no configuration module for it.
///
/// There is no git revision or build date: SwiftPM offers no way to stamp them into a build
/// without a build-tool plugin, and a value computed when the manifest is evaluated would go
/// stale (the manifest is cached across commits). Bump `version` when releasing.
public enum SidecarVersion {
    public static let version = "0.2.0"

    /// The compiler that built this binary, to the minor version (`6.3`): the language has no
    /// way to read its own version other than testing it.
    public static let swiftVersion: String = {
        #if compiler(>=6.5)
        return "6.5+"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }()

    /// What `sidecar --version` prints: `sidecar 0.2.0 (swift 6.3)`.
    public static var description: String { "sidecar \(version) (swift \(swiftVersion))" }
}
