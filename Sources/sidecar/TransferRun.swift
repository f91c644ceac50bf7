import Glibc
import SidecarACME
import SidecarApple
import SidecarConfig
import SidecarCrypto
import SidecarEvent

/// One `sidecar transfer export|import` run: every input user not yet in the progress file is
/// asked of Apple's user-migration endpoint, at most `rate` calls a second, recorded a batch at
/// a time. A user Apple refuses (4xx) is recorded with Apple's error and the run goes on;
/// Apple unreachable or failing (5xx, a timeout, an unreadable answer) is retried with
/// back-off, then the run stops, exit 2, to be resumed by running it again.
final class TransferRun {
    enum Side {
        /// The sending team: each `sub` → its `transfer_sub` for `recipient`.
        case export(recipient: String)
        /// The recipient team: each `transfer_sub` → the user's new `sub` (and relay address).
        case `import`
    }

    struct Settings {
        var side: Side
        var clientID: String
        var rate: Double
        var batch: Int
        var retries: Int
        var progressPath: String
    }

    /// Why a run stopped before every user was answered.
    struct Stopped: Error, CustomStringConvertible {
        let description: String
    }

    private let settings: Settings
    private let config: Config
    private let loop: EventLoop
    private let waiter: LoopWaiter
    private let api: UserMigrationAPI
    private let secrets: ClientSecretProvider
    private var accessToken: (token: String, expiresAtMs: Int64)?
    private var nextCallAtMs: Int64 = 0
    private let progress: TransferProgress

    init(settings: Settings, config: Config) throws {
        self.settings = settings
        self.config = config
        loop = try EventLoop()
        waiter = LoopWaiter(loop: loop)
        let apple = config.apple
        var base = apple.baseURL.description
        while base.hasSuffix("/") { base.removeLast() }
        let endpoint = try AppleEndpoint(baseURL: base, allowPlainHTTP: true)
        guard endpoint.scheme == .https || endpoint.isLoopback else {
            throw RuntimeFailure("apple.base_url: plain http is only for an emulator on loopback")
        }
        api = UserMigrationAPI(client: try AppleHTTPClient(base: loop.base, configuration: AppleHTTPClient.Configuration(
            endpoint: endpoint, caFile: apple.caFile, connectTimeout: 5, totalTimeout: 30)))
        let key: P256PrivateKey
        do { key = try P256PrivateKey(pem: apple.privateKey.bytes) } catch {
            throw RuntimeFailure("apple private key (\(apple.privateKey.source)): not a P-256 PKCS#8 PEM key")
        }
        secrets = try ClientSecretProvider(teamID: apple.teamID, keyID: apple.keyID, key: key, audience: base,
                                           lifetime: 3_600, clock: { Int64(time(nil)) })
        progress = TransferProgress(label: Self.label(settings.side))
    }

    static func label(_ side: Side) -> String {
        switch side {
        case .export: "transfer export"
        case .import: "transfer import"
        }
    }

    /// Answers every id of `inputs` (in order, duplicates once) through `journal`; returns the
    /// output rows in input order.
    func run(_ inputs: [String], journal: TransferJournal) throws -> [String] {
        let todo = inputs.filter { journal.done[$0] == nil }
        progress.start(total: inputs.count, done: inputs.count - todo.count)
        var unflushed = 0
        defer { progress.finish() }
        for id in todo {
            do {
                let row = try answer(id)
                journal.record(id, row: row)
                progress.advance(failed: !row.hasSuffix(","))
            } catch {
                try journal.flush()
                throw error
            }
            unflushed += 1
            if unflushed >= settings.batch {
                try journal.flush()
                unflushed = 0
            }
        }
        try journal.flush()
        return inputs.compactMap { journal.done[$0] }
    }

    /// The CSV row for `id` (its error column names Apple's refusal), or `Stopped`.
    private func answer(_ id: String) throws -> String {
        var attempt = 0
        var renewedToken = false
        while true {
            let result = call(id, token: try token())
            switch result {
            case .success(let fields):
                return (fields + [""]).joined(separator: ",")
            case .failure(.rejected(.invalidGrant, _, _)) where !renewedToken:
                // The access token may have expired early: one more try with a new one.
                accessToken = nil
                renewedToken = true
            case .failure(.rejected(.invalidClient, _, let status)):
                throw Stopped(description: "Apple refused the client (invalid_client, \(status)): check apple.team_id, "
                    + "apple.key_id, the key and --client-id for this side of the transfer")
            case .failure(.rejected(let code, _, _)):
                return (Self.emptyFields(settings.side, id) + [Self.csvSafe(code.code)]).joined(separator: ",")
            case .failure(let failure):
                attempt += 1
                guard attempt <= settings.retries else {
                    throw Stopped(description: "Apple did not answer for \(id) after \(attempt) attempts (\(failure.reason))")
                }
                waiter.sleep(milliseconds: min(10_000, 500 << Int64(attempt - 1)))
            }
        }
    }

    private func call(_ id: String, token: String) -> Result<[String], AppleError> {
        pace()
        let secret: String
        do { secret = try secrets.secret(forClientID: settings.clientID) } catch {
            return .failure(.rejected(.invalidClient, description: "\(error)", status: 0))
        }
        switch settings.side {
        case .export(let recipient):
            let result: Result<String, AppleError> = waiter.wait { done in
                api.transferSubject(of: id, target: recipient, accessToken: token, clientID: settings.clientID,
                                    clientSecret: secret, completion: done)
            }
            return result.map { [id, $0] }
        case .import:
            let result: Result<UserMigrationAPI.MigratedUser, AppleError> = waiter.wait { done in
                api.exchange(id, accessToken: token, clientID: settings.clientID, clientSecret: secret, completion: done)
            }
            return result.map { user in
                [id, user.subject, user.email.map(Self.csvSafe) ?? "", user.isPrivateEmail ? "true" : "false"]
            }
        }
    }

    private static func emptyFields(_ side: Side, _ id: String) -> [String] {
        switch side {
        case .export: [id, ""]
        case .import: [id, "", "", ""]
        }
    }

    /// A client-credentials token, renewed a minute before it expires.
    private func token() throws -> String {
        let nowMs = Self.nowMs()
        if let accessToken, nowMs < accessToken.expiresAtMs - 60_000 { return accessToken.token }
        var attempt = 0
        while true {
            let secret: String
            do { secret = try secrets.secret(forClientID: settings.clientID) } catch {
                throw Stopped(description: "client secret: \(error)")
            }
            pace()
            let result: Result<(String, Int), AppleError> = waiter.wait { done in
                api.accessToken(clientID: settings.clientID, clientSecret: secret, completion: done)
            }
            switch result {
            case .success(let (token, lifetime)):
                accessToken = (token, Self.nowMs() + Int64(lifetime) * 1000)
                return token
            case .failure(.rejected(let code, let description, let status)):
                throw Stopped(description: "Apple refused the access token (\(code.code), \(status)"
                    + (description.map { ": \($0)" } ?? "") + ")")
            case .failure(let failure):
                attempt += 1
                guard attempt <= settings.retries else {
                    throw Stopped(description: "no access token from Apple after \(attempt) attempts (\(failure.reason))")
                }
                waiter.sleep(milliseconds: min(10_000, 500 << Int64(attempt - 1)))
            }
        }
    }

    /// At most `rate` calls a second: each waits for its turn.
    private func pace() {
        let nowMs = Self.nowMs()
        if nextCallAtMs > nowMs { waiter.sleep(milliseconds: nextCallAtMs - nowMs) }
        nextCallAtMs = max(nowMs, nextCallAtMs) + Int64(1000 / settings.rate)
    }

    private static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// A field as CSV carries it without quoting: commas, quotes and line breaks dropped.
    static func csvSafe(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0 != "," && $0 != "\"" && $0 != "\n" && $0 != "\r" }.map(Character.init))
    }
}

/// The progress bar on standard error when it is a terminal; nothing otherwise.
final class TransferProgress {
    private let label: String
    private let enabled = isatty(2) == 1
    private var total = 0
    private var done = 0
    private var failed = 0
    private var lastDrawMs: Int64 = 0

    init(label: String) { self.label = label }

    func start(total: Int, done: Int) {
        self.total = total
        self.done = done
        draw(force: true)
    }

    func advance(failed isFailure: Bool) {
        done += 1
        if isFailure { failed += 1 }
        draw(force: done == total)
    }

    func finish() {
        if enabled { writeStandardError("\n") }
    }

    private func draw(force: Bool) {
        guard enabled else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowMs = Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
        guard force || nowMs - lastDrawMs >= 100 else { return }
        lastDrawMs = nowMs
        let width = 30
        let filled = total == 0 ? width : done * width / total
        writeStandardError("\r\(label) [" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            + "] \(done)/\(total)" + (failed > 0 ? " (\(failed) refused by Apple)" : "") + "\u{1B}[K")
    }
}
