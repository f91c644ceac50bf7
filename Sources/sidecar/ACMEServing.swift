import Glibc
import Logging
import SidecarACME
import SidecarConfig
import SidecarEvent
import SidecarProxy
import SidecarStore
import Synchronization

/// `tls.acme` in `sidecar run`: the manager made from the configuration, the certificate the
/// listener starts with, and every later one handed to the running proxy.
final class ACMEServing: Sendable {
    let manager: ACMEManager
    private let http2: Bool
    /// The context in service: SIGHUP's reload keeps it (the configuration names no files).
    private let current: Mutex<TLSServerContext>
    /// Where new certificates go (the running proxy's), once started.
    private let handover = Mutex<CertificateHandover?>(nil)
    /// Started on the self-signed placeholder: ready only once a real certificate is served.
    private let startedOnPlaceholder: Bool

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    /// Prepares at start: binds the HTTP-01 listener, reads the stored certificate or makes
    /// the placeholder, and builds the first TLS context.
    init(config: Config, acme: Config.ACME, store: (any StoreBackend)?) throws(Refusal) {
        http2 = config.http2
        let settings = try Self.settings(config: config, acme: acme)
        if acme.challenge == .tlsALPN01 { TLSALPNChallenges.enabled.store(true, ordering: .releasing) }
        do {
            manager = try ACMEManager(settings: settings, sharedStore: acme.shareViaStore ? store as? RedisStore : nil)
            let (certificateFile, keyFile, isPlaceholder) = try manager.prepare()
            let context = try TLSServerContext(certFile: certificateFile, keyFile: keyFile, http2: config.http2)
            if isPlaceholder { TLSALPNChallenges.refuseOtherHandshakes(on: context) }
            startedOnPlaceholder = isPlaceholder
            current = Mutex(context)
        } catch let error as ACMEError {
            throw Refusal(description: error.message)
        } catch {
            throw Refusal(description: "tls.acme: \(error)")
        }
    }

    static func settings(config: Config, acme: Config.ACME) throws(Refusal) -> ACMESettings {
        guard let directory = ACMEURL(acme.directory.description) else {
            throw Refusal(description: "tls.acme.directory: \(acme.directory) is not a URL the ACME client can fetch")
        }
        let challenge: ACMESettings.Challenge
        switch acme.challenge {
        case .tlsALPN01: challenge = .tlsALPN01
        case .http01:
            do { challenge = .http01(listen: try SocketAddress(parsing: acme.httpListen.description)) } catch {
                throw Refusal(description: "tls.acme.http_listen: \(error)")
            }
        }
        let binding = acme.eabKeyID.flatMap { id in acme.eabHMACKey.map { ExternalAccountBinding(keyID: id, macKey: $0.bytes) } }
        return ACMESettings(
            directoryURL: directory, caFile: acme.caFile, email: acme.email, domains: acme.domains,
            keyType: acme.keyType == .rsa2048 ? .rsa : .ecdsa, challenge: challenge, binding: binding,
            storageDirectory: acme.storage, publicOrigin: config.publicURL.origin)
    }

    var context: TLSServerContext { current.withLock { $0 } }

    var report: CertificateReport {
        let status = manager.status
        return CertificateReport(
            readinessProblem: { [self] in
                // Issued is not yet served: the proxy takes the first certificate on its next
                // turn (a renewal's handover changes nothing: the old one serves meanwhile).
                status.readinessProblem
                    ?? (startedOnPlaceholder && !(handover.withLock { $0?.hasTakenOne } ?? false)
                        ? "tls certificate being taken into service" : nil)
            },
            metrics: { status.metrics(now: Int64(time(nil))) })
    }

    /// Starts ordering and renewing; each new certificate goes to `server` for new connections.
    func start(serving server: ProxyServer) throws(Refusal) {
        let http2 = self.http2
        let handover = server.certificates
        self.handover.withLock { $0 = handover }
        do {
            try manager.start { [self] certificateFile, keyFile in
                do {
                    let context = try TLSServerContext(certFile: certificateFile, keyFile: keyFile, http2: http2)
                    current.withLock { $0 = context }
                    handover.serve(context)
                } catch {
                    Logger(label: "sidecar.acme").error("acme: the new certificate cannot be served: \(error)")
                }
            }
        } catch {
            throw Refusal(description: error.message)
        }
    }
}
