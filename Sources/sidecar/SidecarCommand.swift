import ArgumentParser

/// `sidecar` — the Sign in with Apple reverse-proxy sidecar (SPEC §2).
/// Each subcommand lives in its own file; exit codes: 0 ok, 1 config/usage error, 2 runtime failure.
@main
struct SidecarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sidecar",
        abstract: "Sign in with Apple in front of any web app.",
        subcommands: [
            // (subcommands register here, one line each)
            RunCommand.self,
        ],
        defaultSubcommand: RunCommand.self
    )
}
