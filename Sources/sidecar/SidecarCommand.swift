import ArgumentParser
import Glibc
import SidecarConfig

/// `sidecar` — the Sign in with Apple reverse-proxy sidecar (SPEC §2).
/// Each subcommand lives in its own file. Exit codes: 0 ok, 1 config/usage error,
/// 2 runtime failure (`RuntimeFailure`).
@main
struct SidecarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sidecar",
        abstract: "Sign in with Apple in front of any web app.",
        version: SidecarVersion.description,
        subcommands: [
            RunCommand.self,
            SecretCommand.self,
            CheckCommand.self,
            EmulatorCommand.self,
            DemoCommand.self,
            VersionCommand.self,
        ],
        defaultSubcommand: RunCommand.self
    )

    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as RuntimeFailure {
            writeStandardError("sidecar: \(failure.description)\n")
            Glibc.exit(2)
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            // ArgumentParser's usage errors exit 64; the sidecar promises 1 (SPEC §2).
            writeStandardError(fullMessage(for: error) + "\n")
            Glibc.exit(code == .validationFailure ? 1 : code.rawValue)
        }
    }
}

/// Unbuffered write to fd 2 (glibc's `stderr` global is not importable under Swift 6).
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
}
