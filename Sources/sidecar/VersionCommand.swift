import ArgumentParser
import SidecarConfig
import SidecarHTTP

/// `sidecar version` (also `sidecar --version`): what this binary is, for bug reports and for
/// checking a deployment — the same string either way.
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print the version and exit.")

    func run() {
        print(SidecarVersion.description)
    }
}
