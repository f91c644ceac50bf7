import ArgumentParser
import Foundation
import Glibc
import SidecarACME
import SidecarConfig
import SidecarEvent
import SidecarStore

/// `sidecar acme status`: what `tls.acme` has stored, its expiry and the next renewal.
struct ACMECommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acme", abstract: "Certificates obtained by ACME (tls.acme).", subcommands: [ACMEStatusCommand.self])
}

struct ACMEStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print what tls.acme has stored: the account, the certificate, its expiry and the next renewal.",
        discussion: """
            Reads the configuration as `sidecar check` does, then the store tls.acme names (the
            storage directory, or the shared Redis store with share_via_store) without changing
            anything and without asking the CA. The next renewal is two-thirds into the
            certificate's lifetime; a running sidecar may renew earlier when the CA's renewal
            information (RFC 9773) says so. Exit status: 0 with a valid certificate stored, 3
            without one (none yet, expired, or not naming every domain), 1 for an invalid
            configuration.
            """)

    @Option(name: .long, help: ArgumentHelp("The configuration file, or none.", valueName: "file"))
    var config: String = "sidecar.yaml"

    func run() throws {
        let loaded: Config
        do { loaded = try Config.load(file: ServingConfiguration.configFile(config)) } catch {
            writeStandardError(error.errors.map(\.description).joined(separator: "\n") + "\n")
            throw ExitCode(1)
        }
        guard let acme = loaded.acme else {
            writeStandardError("\(ServingConfiguration.label(config)): tls.acme is not set\n")
            throw ExitCode(1)
        }
        let settings: ACMESettings
        do { settings = try ACMEServing.settings(config: loaded, acme: acme) } catch {
            writeStandardError("\(error)\n")
            throw ExitCode(1)
        }
        let (location, account, stored) = try read(settings, acme: acme, config: loaded)
        let now = Int64(Glibc.time(nil))
        var rows: [(String, String)] = [
            ("directory", acme.directory.description),
            ("domains", acme.domains.joined(separator: ", ")),
            ("challenge", acme.challenge.rawValue),
            ("storage", location),
            ("account", account ? "key stored" : "none yet (made at the first order)"),
        ]
        var usable = false
        if let stored, let summary = CertificateSummary(pem: stored.chainPEM, domains: acme.domains) {
            usable = summary.isUsable(now: now)
            let left = summary.notAfter - now
            rows.append(("certificate", "valid \(Self.moment(summary.notBefore)) to \(Self.moment(summary.notAfter)) "
                + (left > 0 ? "(expires in \(Self.span(left)))" : "(EXPIRED \(Self.span(-left)) ago)")
                + (summary.namesEveryDomain ? "" : "; does not name every domain: a new one is ordered at start")))
            let due = summary.twoThirdsPoint
            rows.append(("next renewal", due <= now ? "due now" : "\(Self.moment(due)) (in \(Self.span(due - now)))"))
        } else {
            rows.append(("certificate", stored == nil ? "none yet (ordered at start)" : "unreadable: a new one is ordered at start"))
        }
        let width = rows.map(\.0.count).max() ?? 0
        print(rows.map { "  " + $0.0 + String(repeating: " ", count: width - $0.0.count + 2) + $0.1 }.joined(separator: "\n"))
        if !usable { throw ExitCode(3) }
    }

    private func read(_ settings: ACMESettings, acme: Config.ACME, config: Config) throws -> (String, Bool, StoredCertificate?) {
        do {
            if acme.shareViaStore, config.revocations.store.isRedis {
                let store = try openStore(StoreSpec(config.revocations), limits: StoreLimits(config.revocations),
                                          onReadinessChange: { _, _ in }, onNotice: { _ in })
                guard let redis = store as? RedisStore else { throw RuntimeFailure("revocations.store is not Redis") }
                let storage = RedisStorage(store: redis, waiter: LoopWaiter(loop: try EventLoop()),
                                           caHost: settings.caHost, name: settings.domains[0])
                return (storage.location, try storage.accountKey() != nil, try storage.certificate())
            }
            let storage = try DirectoryStorage(directory: settings.storageDirectory, caHost: settings.caHost,
                                               name: settings.domains[0], create: false)
            return (storage.location, try storage.accountKey() != nil, try storage.certificate())
        } catch let error as ACMEError {
            throw RuntimeFailure(error.message)
        }
    }

    private static func moment(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    private static func span(_ seconds: Int64) -> String {
        seconds >= 2 * 86_400 ? "\(seconds / 86_400) days" : seconds >= 7200 ? "\(seconds / 3600) hours" : "\(seconds / 60) minutes"
    }
}
