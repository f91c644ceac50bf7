import ArgumentParser
import Glibc
import SidecarApple
import SidecarCrypto
import SidecarEvent

/// `sidecar emulator` — the Apple emulator alone, for operators' integration tests.
struct EmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulator",
        abstract: "Run a local stand-in for appleid.apple.com (authorize, token, keys, revoke).",
        discussion: """
        Test controls live under /emulator/ (GET /emulator lists them): users, auto-approval, \
        faults for the next token response, key rotation, signed server-to-server notifications, \
        and native-app identity tokens and codes for a bundle id (POST /emulator/native).
        """)

    @Option(help: "Address to listen on (host:port; port 0 picks a free one).")
    var listen: String = "127.0.0.1:8443"

    @Option(help: "PEM certificate chain: serve HTTPS.")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "Base URL the emulator is reached at: the iss of its tokens and the aud of client secrets. Default: http(s)://<listen>.")
    var issuer: String?

    @Option(help: "Apple team id expected as the iss of client secrets.")
    var teamId: String

    @Option(name: .customLong("client"), help: "ID=REDIRECT_URI[,REDIRECT_URI…] (a web Services ID) or ID (a native bundle id). Repeatable.")
    var clients: [String] = []

    @Option(name: .customLong("client-key"), help: "KID=PUBLIC_KEY_PEM_FILE: a P-256 key client secrets are signed with (a .p8 private key also works). Repeatable.")
    var clientKeys: [String] = []

    @Option(help: "Approve every authorization as this email without showing the page.")
    var autoApprove: String?

    @Option(help: "JSON file of test users: [{\"email\", \"firstName\", \"lastName\", \"hideMyEmail\"}].")
    var users: String?

    @Option(help: "Directory holding the RS256 signing keys (<kid>.pem), created keys are saved there.")
    var keysDir: String?

    @Flag(help: "Let POST /emulator/notify deliver to any host; without it only to localhost, 127.0.0.0/8 and [::1].")
    var allowNotifyToAnyHost = false

    func validate() throws {
        guard !clients.isEmpty else { throw ValidationError("at least one --client is required") }
        guard !clientKeys.isEmpty else { throw ValidationError("at least one --client-key is required") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    func run() throws {
        let address: SocketAddress
        do { address = try SocketAddress(parsing: listen) } catch { throw ValidationError("--listen: \(error)") }
        var options = EmulatorOptions(issuer: issuer ?? "", teamID: teamId,
                                      clients: try clients.map { try EmulatorClient(parsing: $0) },
                                      clientKeys: try loadClientKeys(), keyDirectory: keysDir)
        options.allowNotifyToAnyHost = allowNotifyToAnyHost
        if let users { options.users = try EmulatorUsersFile.load(users) }
        if let email = autoApprove {
            guard TestUser.isPlausibleEmail(email) else { throw ValidationError("--auto-approve: not an email address") }
            options.autoApprove = options.users.first { $0.email == email } ?? TestUser(email: email)
        }
        var tls: ServiceTLSContext?
        if let tlsCert, let tlsKey {
            do { tls = try ServiceTLSContext(certificateFile: tlsCert, keyFile: tlsKey) } catch {
                throw ValidationError("\(error)")
            }
        }
        // Block the stop signals before any thread starts, then wait for one here.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let running: RunningEmulator
        do { running = try RunningEmulator.start(options: options, listen: address, tls: tls) } catch {
            switch error {
            case .configuration(let problem): throw ValidationError(problem.description)
            case .listen(let problem):
                say("sidecar emulator: \(problem)", fd: 2)
                throw ExitCode(2)
            }
        }
        say("""
            Apple emulator listening on \(running.address) — issuer \(running.issuer)
              authorize \(running.issuer)/auth/authorize, token \(running.issuer)/auth/token, keys \(running.issuer)/auth/keys
              test controls: \(running.issuer)/emulator
            """)
        var received: Int32 = 0
        sigwait(&signals, &received)
        running.stop()
    }

    private func loadClientKeys() throws -> [String: P256PublicKey] {
        var keys: [String: P256PublicKey] = [:]
        for entry in clientKeys {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("--client-key \(entry): expected KID=PEM_FILE") }
            let path = String(parts[1])
            guard let pem = EmulatorUsersFile.read(path) else { throw ValidationError("--client-key: cannot read \(path)") }
            if let key = try? P256PublicKey(pem: pem) {
                keys[String(parts[0])] = key
            } else if let key = try? P256PrivateKey(pem: pem) {
                keys[String(parts[0])] = key.publicKey
            } else {
                throw ValidationError("--client-key: \(path) is not a P-256 public or private key in PEM")
            }
        }
        return keys
    }
}

/// Writes a line straight to a file descriptor (unbuffered: scripts wait for it).
private func say(_ text: String, fd: Int32 = 1) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
