import Foundation
import Glibc
import Logging
import SidecarCrypto
import SidecarEvent
import SidecarStore

/// Keeps the listener's certificate issued and renewed, on a thread of its own: obtains one at
/// start when none valid is stored, renews at the ARI window or two-thirds into the lifetime,
/// backs off on CA errors (honouring `Retry-After`), keeps the old certificate meanwhile, and
/// hands every new one to `publish`, which swaps it in for new connections as SIGHUP does.
public final class ACMEManager: @unchecked Sendable {
    public let settings: ACMESettings
    public let status = ACMEStatus()
    /// Where certificates are kept: the directory, or the shared Redis store (set on the
    /// thread that uses it: a Redis connection belongs to one loop).
    private var storage: CertificateStorage
    private let sharedStore: RedisStore?
    private let files: DirectoryStorage
    private let logger = Logger(label: "sidecar.acme")
    private var httpListenFD: Int32?
    private var thread: WorkerThread?
    /// Rung by `stop()`: the thread's waits end and it returns, so that the process can join
    /// it before exit runs OpenSSL's cleanup (a thread still signing or handshaking then
    /// reads freed memory).
    private let stopChannel: WakeupChannel
    /// What was last handed to `publish` (a replica's renewal is picked up when it differs).
    private var served: StoredCertificate?
    private var ariMoment: (renewalID: String, at: Int64, fetched: Int64)?

    /// `sharedStore` nil: the directory alone; else the Redis store the replicas share, with
    /// the directory holding the served copy.
    public init(settings: ACMESettings, sharedStore: RedisStore? = nil) throws(ACMEError) {
        self.settings = settings
        self.sharedStore = sharedStore
        files = try DirectoryStorage(directory: settings.storageDirectory, caHost: settings.caHost,
                                     name: settings.domains[0])
        storage = files
        do { stopChannel = try WakeupChannel() } catch {
            throw ACMEError(.local, "acme: cannot create its thread's wake-up: \(error)")
        }
    }

    private func attachStorage(_ waiter: LoopWaiter) -> CertificateStorage {
        guard let sharedStore else { return files }
        return RedisStorage(store: sharedStore, waiter: waiter, caHost: settings.caHost, name: settings.domains[0])
    }

    /// At start, before the proxy serves: binds the HTTP-01 listener (a port in use fails the
    /// start) and names the files to serve now — the stored certificate when it is valid, else
    /// a self-signed placeholder (`isPlaceholder`: the listener then completes challenge
    /// handshakes only, and `/readyz` answers 503).
    public func prepare() throws(ACMEError) -> (certificateFile: String, keyFile: String, isPlaceholder: Bool) {
        if case .http01(let address) = settings.challenge {
            do { httpListenFD = try Socket.listen(on: address, reusePort: false) } catch {
                throw ACMEError(.local, "tls.acme.http_listen: \(address): \(error)")
            }
        }
        let now = Int64(time(nil))
        // The shared store's certificate, else the served copy of an earlier run (the store
        // may be down at start: the last certificate is still worth serving).
        var candidates: [StoredCertificate?] = []
        if sharedStore != nil, let loop = try? EventLoop() {
            candidates.append(try? attachStorage(LoopWaiter(loop: loop)).certificate())
            sharedStore?.detach()
        }
        candidates.append(try? files.certificate())
        for case let stored? in candidates {
            guard let summary = CertificateSummary(pem: stored.chainPEM, domains: settings.domains),
                  summary.isUsable(now: now), stored.keyMatches else { continue }
            try files.saveCertificate(stored)
            served = stored
            status.update { $0.notAfter = summary.notAfter }
            return (files.servedFiles.certificate, files.servedFiles.key, false)
        }
        let (certificateFile, keyFile) = try placeholder()
        return (certificateFile, keyFile, true)
    }

    /// Starts the ACME thread; `publish` gets the files of each new certificate, on that thread.
    public func start(publish: @escaping @Sendable (_ certificateFile: String, _ keyFile: String) -> Void) throws(ACMEError) {
        let fd = httpListenFD
        do {
            thread = try WorkerThread { [self] in self.run(httpListenFD: fd, publish: publish) }
        } catch {
            throw ACMEError(.local, "acme: cannot start its thread: \(error)")
        }
    }

    /// Ends the ACME thread and waits for it: at once when it waits on the CA, the store or its
    /// schedule; after the step under way when it computes (a key, a signature). An order cut
    /// short leaves the shared order lock to expire (`acquireOrderLock`'s 600 s).
    public func stop() {
        stopChannel.notify()
        thread?.join()
        thread = nil
    }

    private func adopt(_ certificate: StoredCertificate, summary: CertificateSummary) throws(ACMEError) {
        if storage !== files { try files.saveCertificate(certificate) }
        served = certificate
    }

    private func placeholder() throws(ACMEError) -> (certificateFile: String, keyFile: String) {
        let base = settings.storageDirectory + "/" + DirectoryStorage.safe(settings.domains[0]) + ".placeholder"
        let keyPEM = try CertificateKeyType.ecdsa.generatePEM()
        let pem = try SelfSignedCertificate.pem(domain: settings.domains[0], keyPEM: keyPEM, days: 7)
        try files.writeFile(keyPEM, to: base + ".key")
        try files.writeFile(pem, to: base + ".crt")
        return (base + ".crt", base + ".key")
    }

    // MARK: The ACME thread

    private func run(httpListenFD: Int32?, publish: @escaping @Sendable (String, String) -> Void) {
        let loop: EventLoop
        do { loop = try EventLoop() } catch {
            logger.critical("acme: cannot start its event loop: \(error)")
            return
        }
        let waiter = LoopWaiter(loop: loop)
        storage = attachStorage(waiter)
        let transport = LoopTransport(waiter: waiter, caFile: settings.caFile)
        let solver: ChallengeSolver
        switch settings.challenge {
        case .http01:
            let responder = HTTP01Responder(loop: loop, listeningFD: httpListenFD ?? -1, publicOrigin: settings.publicOrigin)
            responder.shared = storage as? RedisStorage
            solver = responder
        case .tlsALPN01:
            solver = TLSALPNResponder()
        }
        let stopWakeup = Wakeup(loop: loop, channel: stopChannel) { waiter.stop() }
        keepIssued(waiter: waiter, transport: transport, solver: solver, publish: publish)
        // What lives on the loop goes before it does.
        (solver as? HTTP01Responder)?.close()
        transport.close()
        sharedStore?.detach()
        withExtendedLifetime((stopWakeup, loop)) {}
        logger.info("acme: stopped")
    }

    /// Orders and renews until the waiter is stopped.
    private func keepIssued(
        waiter: LoopWaiter, transport: LoopTransport, solver: ChallengeSolver,
        publish: @escaping @Sendable (String, String) -> Void
    ) {
        var client: ACMEClient?
        var failures = 0
        while !waiter.isStopped {
            let now = Int64(time(nil))
            let current = currentCertificate(now: now, publish: publish)
            var due = now
            if let current, let ready = try? client ?? makeClient(transport) {
                client = ready
                due = RenewalSchedule.due(current, ariMoment: ariDue(current, client: ready, now: now))
            } else if let current {
                due = current.twoThirdsPoint
            }
            status.update { $0.nextRenewal = due }
            if due > now {
                waiter.sleep(milliseconds: min(due - now, RenewalSchedule.maxSleepSeconds) * 1000)
                continue
            }
            do {
                if client == nil { client = try makeClient(transport) }
                guard let client else { continue }
                guard try storage.acquireOrderLock(seconds: 600) else {
                    logger.info("acme: another replica is ordering; waiting for its certificate")
                    waiter.sleep(milliseconds: 10_000)
                    continue
                }
                defer { storage.releaseOrderLock() }
                // Another replica may have finished while this one waited for the lock.
                if let fresh = currentCertificate(now: Int64(time(nil)), publish: publish), fresh != current {
                    continue
                }
                var issuer = ACMEIssuer(client: client, solver: solver) { waiter.sleep(milliseconds: $0) }
                issuer.log = { [logger] line in logger.info("acme: \(line)") }
                let issued = try issuer.issue(
                    domains: settings.domains, keyType: settings.keyType, email: settings.email,
                    binding: settings.binding, replaces: current?.renewalID, now: { Int64(time(nil)) })
                let certificate = StoredCertificate(chainPEM: issued.certificatePEM, keyPEM: issued.keyPEM)
                try storage.saveCertificate(certificate)
                failures = 0
                status.update {
                    $0.failures = 0
                    $0.lastError = nil
                }
                ariMoment = nil
                _ = currentCertificate(now: Int64(time(nil)), publish: publish)
            } catch {
                if waiter.isStopped { return }
                failures += 1
                let wait = RenewalSchedule.backoffSeconds(failures: failures, retryAfter: error.retryAfterSeconds)
                status.update {
                    $0.failures = failures
                    $0.lastError = error.message
                    $0.nextRenewal = Int64(time(nil)) + wait
                }
                report(error, current: current, failures: failures, retryIn: wait)
                if error.kind == .transport { client = nil }  // the directory is fetched again
                waiter.sleep(milliseconds: wait * 1000)
            }
        }
    }

    private func makeClient(_ transport: LoopTransport) throws(ACMEError) -> ACMEClient {
        let key: JWSSigningKey
        if let pem = try storage.accountKey() {
            do { key = try JWSSigningKey(pem: Array(pem.utf8)) } catch {
                throw ACMEError(.local, "acme: the stored account key in \(storage.location) is unusable: \(error)")
            }
        } else {
            let made = try settings.keyType.generateAccountKey()
            do { try storage.saveAccountKey(try made.pkcs8PEM()) } catch let error as ACMEError { throw error } catch {
                throw ACMEError(.local, "acme: cannot encode the account key: \(error)")
            }
            // A replica that saved its key first wins (the store keeps the first): use that one.
            let kept = try storage.accountKey().flatMap { try? JWSSigningKey(pem: Array($0.utf8)) }
            key = kept ?? made
        }
        let client = ACMEClient(directoryURL: settings.directoryURL, accountKey: key, transport: transport)
        client.onBadNonce = { [logger] url in logger.debug("acme: \(url): the CA refused the nonce (badNonce); retried with its fresh one") }
        try client.loadDirectory()
        return client
    }

    /// The stored certificate when usable, published if it is not the one served (a first
    /// issuance here, or a renewal by another replica).
    private func currentCertificate(now: Int64, publish: (String, String) -> Void) -> CertificateSummary? {
        guard let stored = try? storage.certificate(),
              let summary = CertificateSummary(pem: stored.chainPEM, domains: settings.domains),
              summary.isUsable(now: now), stored.keyMatches else { return nil }
        if stored != served {
            do { try adopt(stored, summary: summary) } catch {
                logger.error("acme: cannot write the served copy: \(error)")
                return summary
            }
            let (certificateFile, keyFile) = files.servedFiles
            publish(certificateFile, keyFile)
            // Only now: `/readyz` turns ready on the first certificate once it is handed over.
            status.update { $0.notAfter = summary.notAfter }
            logger.info("acme: certificate in service", metadata: [
                "domains": "\(settings.domains.joined(separator: ","))", "not_after": "\(Self.timeText(summary.notAfter))",
            ])
        }
        return summary
    }

    /// RFC 9773: the CA's window, fetched again every six hours; nil without ARI.
    private func ariDue(_ summary: CertificateSummary, client: ACMEClient, now: Int64) -> Int64? {
        guard let renewalID = summary.renewalID else { return nil }
        if let cached = ariMoment, cached.renewalID == renewalID, now - cached.fetched < RenewalSchedule.maxSleepSeconds {
            return cached.at
        }
        guard let answer = try? client.renewalWindow(certificateID: renewalID) else { return nil }
        let at = Int64(answer.window.randomMoment().timeIntervalSince1970)
        ariMoment = (renewalID, at, now)
        return at
    }

    private func report(_ error: ACMEError, current: CertificateSummary?, failures: Int, retryIn: Int64) {
        let metadata: Logger.Metadata = [
            "error": "\(error.message)", "failures": "\(failures)", "retry_in_s": "\(retryIn)",
        ]
        if let current {
            let left = current.notAfter - Int64(time(nil))
            logger.warning("\("acme: certificate renewal failed; the current certificate is served until it expires") (in \(left / 3600) h)", metadata: metadata.merging(["not_after": "\(Self.timeText(current.notAfter))"]) { $1 })
        } else {
            logger.error("\(Self.noCertificateYet)", metadata: metadata)
        }
    }

    static let noCertificateYet = "acme: no certificate issued yet; /readyz answers 503 and the listener refuses "
        + "every handshake but the CA's until one is"

    static func timeText(_ seconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}
