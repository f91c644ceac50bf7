import ArgumentParser
import Glibc
import SidecarConfig
import SidecarEvent
import SidecarHTTP

/// `sidecar` — the Sign in with Apple reverse-proxy sidecar.
/// Each subcommand lives in its own file. Exit codes: 0 ok, 1 config/usage error,
/// 2 runtime failure (`RuntimeFailure`).
@main
struct SidecarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sidecar",
        abstract: "Sign in with Apple in front of any web app.",
        discussion: SidecarCommand.manual,
        subcommands: [
            RunCommand.self,
            SecretCommand.self,
            CheckCommand.self,
            ACMECommand.self,
            UsersCommand.self,
            TransferCommand.self,
            EmulatorCommand.self,
            DemoCommand.self,
            VersionCommand.self,
        ],
        defaultSubcommand: RunCommand.self
    )

    // Not `CommandConfiguration.version`: ArgumentParser would list --version in every
    // subcommand's help, where it means nothing; `main` answers it, this declares it here only.
    @Flag(name: .long, help: "Show the version.")
    var version = false

    /// What `sidecar --help` prints below the usage: the sections of a man page, since an
    /// installed binary may be all an operator has (`scripts/install` also installs sidecar.1).
    static let manual = """
        A reverse proxy that runs the Sign in with Apple web flow and the
        code-for-token exchange itself, keeps sessions in sealed cookies (or
        bearer tokens for native apps) and forwards authenticated requests to
        the upstream with identity headers that clients can never forge
        (every client copy is removed).

        FILES
          sidecar.yaml     the configuration (--config; default
                           ./sidecar.yaml); the package's is
                           /etc/sidecar/sidecar.yaml, every key with its
                           default in
                           /usr/share/doc/sidecar/examples/sidecar.yaml
          cookie-secret    the session secret (session.secrets:
                           [file:/etc/sidecar/cookie-secret]), mode 0640,
                           group sidecar; the package makes it
          AuthKey_*.p8     Apple's ES256 key that signs client secrets
                           (apple.private_key_file), mode 0640, group
                           sidecar

        SIGNALS
          SIGHUP           reload the configuration, TLS certificate,
                           assertion key and page templates; a
                           configuration that fails keeps the running one
          SIGTERM, SIGINT  stop accepting, answer what is in flight, exit 0

        EXIT STATUS
          0 success; 1 invalid configuration or usage (file, key, line and
          column are named); 2 a runtime failure (a port in use, a worker
          that cannot start)

        ENVIRONMENT
          SIDECAR_<KEY>    sets a key, overriding the file: SIDECAR_ and the
                           key path upper-cased with . as _; a list is
                           comma-separated; `--config none` runs without
                           a file. For example:
                           SIDECAR_SESSION_LIFETIME=7d
                           SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS=example.com
          Any secret value may be env:NAME or file:/path (session.secrets,
          apple.private_key, revocations.password,
          revocations.sentinel_password, revocations.store, admin.token).

        EXAMPLES
          (umask 027; sidecar secret > /etc/sidecar/cookie-secret)
                                               a fresh session secret,
                                               then chgrp sidecar
          sidecar check --config sidecar.yaml  validate, print a summary
          sidecar run --config sidecar.yaml    serve
          sidecar users revoke <sub> --config sidecar.yaml
                                               sign a user out on every
                                               replica (admin.token)
          sidecar demo                         try it with the built-in
                                               Apple emulator
        """

    static func main() {
        EventMemory.install()  // before anything of libevent's is allocated
        if Array(CommandLine.arguments.dropFirst()) == ["--version"] {
            print(SidecarVersion.description)
            return
        }
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let failure as RuntimeFailure {
            writeStandardError("sidecar: \(failure.description)\n")
            Glibc.exit(2)
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }
            // ArgumentParser's usage errors exit 64; the sidecar promises 1 for usage errors.
            // A bare ExitCode has no message: its command has printed its own.
            let message = fullMessage(for: error)
            if !message.isEmpty { writeStandardError(message + "\n") }
            Glibc.exit(code == .validationFailure ? 1 : code.rawValue)
        }
    }
}

/// Unbuffered write to fd 2 (glibc's `stderr` global is not importable under Swift 6).
func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = Glibc.write(2, bytes.baseAddress, bytes.count) }
}
