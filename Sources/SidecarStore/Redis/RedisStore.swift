import Glibc
import SidecarEvent
import SidecarRESP
import Synchronization

/// `revocations.store: redis://…`: the store several replicas share.
///
/// Each worker loop has its own connection (`attach(to:)`), so a single-use check is one
/// round trip on the caller's loop and its completion runs there; nothing blocks. The
/// revocations live in Redis and, as for every back-end, in this process's memory: the
/// request path reads only memory. A thread of the store's own keeps that memory current —
/// a pub/sub subscription, and a full resync whenever the subscription (re)connects, so a
/// revocation published while this replica was cut off is not missed — and watches health.
///
/// Behind Sentinel (`redis+sentinel://`) the store's thread finds the master and follows it;
/// every data connection checks `ROLE` first, and one answered `-READONLY` is dropped, so
/// nothing is written to a replica.
///
/// When Redis cannot be reached, changes fail at once (`.unavailable`: the callers answer
/// 503) and sessions keep being checked against what is known.
public final class RedisStore: StoreBackend, @unchecked Sendable {
    public let revocations = RevocationSet()
    let endpoint: RedisEndpoint
    let schema: RedisSchema
    let limits: StoreLimits
    let clock: StoreClock
    let tls: TLSClientContext?
    let counters = RedisCounters()
    /// The server workers dial, resolved on the store's thread (DNS may block); behind
    /// Sentinel, the master the sentinels named last.
    let resolved = Mutex<RedisPeer?>(nil)
    /// Counts the master's moves: a worker's connection to an older master is remade.
    let masterGeneration = Atomic<UInt64>(0)
    /// What operators should hear that is not a change of readiness (the master moved).
    let onNotice: @Sendable (String) -> Void
    let state = Mutex<StoreHealth.State>(.unavailable("connecting"))
    /// Said once per change of readiness: the store's thread sets it, the sidecar logs it.
    let onReadinessChange: @Sendable (Bool, String) -> Void
    var sync: RedisSync?
    private let links = Mutex<[UInt: LinkBox]>([:])
    private let closed = Atomic<Bool>(false)

    /// A worker's connection, touched only on that worker's thread; the box lets the map
    /// (shared) hold it.
    final class LinkBox: @unchecked Sendable {
        let connection: RedisConnection
        init(_ connection: RedisConnection) { self.connection = connection }
    }

    init(endpoint: RedisEndpoint, limits: StoreLimits, clock: StoreClock,
         onReadinessChange: @escaping @Sendable (Bool, String) -> Void,
         onNotice: @escaping @Sendable (String) -> Void) throws(StoreError) {
        self.endpoint = endpoint
        self.onNotice = onNotice
        schema = RedisSchema(prefix: endpoint.keyPrefix)
        self.limits = limits
        self.clock = clock
        self.onReadinessChange = onReadinessChange
        if endpoint.tls {
            do {
                tls = try TLSClientContext(caFile: endpoint.caFile)
            } catch {
                throw .invalidArgument("revocations.ca_file \(endpoint.caFile ?? ""): cannot be read as PEM certificates")
            }
        } else {
            tls = nil
        }
    }

    public var health: StoreHealth {
        StoreHealth(backend: "redis", location: endpoint.description, state: state.withLock { $0 }, durable: true)
    }

    public var metrics: StoreMetrics { counters.snapshot(revocations: revocations) }
    public var openingNotes: [String] { [] }
    public var createdFile: String? { nil }

    /// Why a connection has no server to dial yet.
    var unresolvedReason: String {
        switch endpoint.location {
        case .server(let host, _): return "cannot resolve \(host)"
        case .sentinels(_, let masterName): return "no sentinel has named the master \"\(masterName)\" yet"
        }
    }

    /// How every connection to a data node begins.
    var dataHandshake: RedisConnection.Handshake {
        RedisConnection.Handshake(password: endpoint.password, database: endpoint.database,
                                  requireMaster: endpoint.sentinels != nil)
    }

    // MARK: worker connections

    public func attach(to loop: EventLoop) {
        let connection = RedisConnection(loop: loop, handshake: dataHandshake, tls: tls, role: .commands) { [self] in
            resolved.withLock { $0 }
        }
        connection.onLatency = { [counters] ms, ok in counters.record(ms: ms, ok: ok) }
        connection.unresolvedReason = unresolvedReason
        if endpoint.sentinels != nil {
            connection.masterGeneration = { [weak self] in self?.masterGeneration.load(ordering: .relaxed) ?? 0 }
            connection.onReadOnly = { [weak self] in self?.sync?.rediscoverChannel.notify() }
        }
        // Readiness follows the store thread's link (back-off up to 5 s); a worker's own link
        // retries at least every second, so sign-ins work again soon after /readyz says so.
        connection.maximumBackoffMs = 1_000
        links.withLock { $0[Self.threadKey] = LinkBox(connection) }
        connection.start()
    }

    public func detach() {
        let box = links.withLock { $0.removeValue(forKey: Self.threadKey) }
        box?.connection.stop()
    }

    static var threadKey: UInt { UInt(pthread_self()) }

    /// This thread's connection; nil off the worker loops.
    private var link: RedisConnection? { links.withLock { $0[Self.threadKey]?.connection } }

    private func send(_ arguments: [String], reply: @escaping (RESPValue?) -> Void) {
        sendBytes(arguments.map { Array($0.utf8) }, reply: reply)
    }

    func sendBytes(_ arguments: [[UInt8]], reply: @escaping (RESPValue?) -> Void) {
        guard !closed.load(ordering: .relaxed), let link else { return answerLater(nil, reply) }
        link.send(RESP.command(arguments), reply: reply)
    }

    private func unavailableReason() -> String {
        if case .unavailable(let why) = state.withLock({ $0 }) { return "redis \(endpoint.description): \(why)" }
        return "redis \(endpoint.description): no answer"
    }

    func failure(_ value: RESPValue?) -> StoreError {
        if case .error(let message) = value { return .unavailable("redis \(endpoint.description) answered: \(message)") }
        return .unavailable(unavailableReason())
    }

    // MARK: StoreBackend

    public func revokeSession(id: [UInt8], expiresAt: Int64, completion: @escaping StoreCompletion<Void>) {
        let key = Key128(id), now = clock.now()
        guard expiresAt > now else { return answerLater(.success(()), completion) }
        send(["EVAL", RedisSchema.revokeSession, "2", schema.sessions, schema.channel, key.hex, String(expiresAt)]) {
            [self] reply in
            guard case .integer = reply else { return completion(.failure(failure(reply))) }
            revocations.revokeSession(key, until: expiresAt, now: clock.now())
            completion(.success(()))
        }
    }

    public func revokeSubject(
        _ subject: String, issuedAtOrBeforeMs: Int64, keepUntil: Int64, completion: @escaping StoreCompletion<Void>
    ) {
        do throws(StoreError) { try checkSubject(subject) } catch { return answerLater(.failure(error), completion) }
        let revocation = SubjectRevocation(cutoffMs: issuedAtOrBeforeMs, keepUntil: keepUntil)
        send(["EVAL", RedisSchema.revokeSubject, "2", schema.subjects, schema.channel, subject,
              String(issuedAtOrBeforeMs), String(keepUntil)]) { [self] reply in
            guard case .integer = reply else { return completion(.failure(failure(reply))) }
            revocations.revokeSubject(subject, revocation, now: clock.now())
            completion(.success(()))
        }
    }

    public func claim(
        _ namespace: ClaimNamespace, key: [UInt8], expiresAt: Int64, completion: @escaping (ClaimResult) -> Void
    ) {
        let milliseconds = (expiresAt - clock.now()) * 1000
        guard milliseconds > 0 else { return answerLater(.claimed, completion) }  // expired: refused by its caller anyway
        send(["SET", schema.claim(namespace, Key128(key)), "1", "NX", "PX", String(milliseconds)]) { [self] reply in
            switch reply {
            case .simple("OK")?: completion(.claimed)
            case .bulk(nil)?: completion(.alreadyUsed)
            default: completion(.unavailable("\(failure(reply))"))
            }
        }
    }

    public func enqueueForward(payload: [UInt8], completion: @escaping StoreCompletion<ForwardID>) {
        guard payload.count <= limits.maximumForwardPayloadBytes else {
            let tooLarge = StoreError.invalidArgument("forward payload over \(limits.maximumForwardPayloadBytes) bytes")
            return answerLater(.failure(tooLarge), completion)
        }
        sendBytes([Array("EVAL".utf8), Array(RedisSchema.enqueueForward.utf8), Array("3".utf8),
                   Array(schema.forwards.utf8), Array(schema.forwardMeta.utf8), Array(schema.forwardSequence.utf8),
                   payload, Array(String(clock.now()).utf8), Array(String(limits.maximumPendingForwards).utf8)]) {
            [self] reply in
            switch reply {
            case .integer(let id)? where id > 0: completion(.success(ForwardID(rawValue: UInt64(id))))
            case .integer?: completion(.failure(.forwardQueueFull(count: limits.maximumPendingForwards, bytes: 0)))
            default: completion(.failure(failure(reply)))
            }
        }
    }

    public func recordSignIn(_ subject: String, _ signIn: SignInRecord, completion: @escaping StoreCompletion<Void>) {
        do throws(StoreError) { try checkSignIn(subject, signIn) } catch { return answerLater(.failure(error), completion) }
        send(["SET", schema.signIn(subject), "\(signIn.atMs) \(signIn.platform)", "EX",
              String(SignInRecord.retentionSeconds)]) { [self] reply in
            guard case .simple("OK")? = reply else { return completion(.failure(failure(reply))) }
            completion(.success(()))
        }
    }

    public func lastSignIn(_ subject: String, completion: @escaping StoreCompletion<SignInRecord?>) {
        do throws(StoreError) { try checkSubject(subject) } catch { return answerLater(.failure(error), completion) }
        send(["GET", schema.signIn(subject)]) { [self] reply in
            switch reply {
            case .bulk(nil)?: completion(.success(nil))
            case .bulk(let bytes?)?:
                let parts = bytes.split(separator: UInt8(ascii: " "), maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, let atMs = RedisSchema.number(parts[0]) else { return completion(.success(nil)) }
                completion(.success(SignInRecord(atMs: atMs, platform: String(decoding: parts[1], as: UTF8.self))))
            default: completion(.failure(failure(reply)))
            }
        }
    }

    public func ackForward(_ id: ForwardID, completion: @escaping StoreCompletion<Void>) {
        send(["EVAL", "redis.call('HDEL', KEYS[1], ARGV[1]); redis.call('HDEL', KEYS[2], ARGV[1]); return 1",
              "2", schema.forwards, schema.forwardMeta, String(id.rawValue)]) { [self] reply in
            guard case .integer = reply else { return completion(.failure(failure(reply))) }
            completion(.success(()))
        }
    }

    public func recordForwardAttempt(_ id: ForwardID, completion: @escaping StoreCompletion<Void>) {
        send(["EVAL", RedisSchema.recordForwardAttempt, "2", schema.forwards, schema.forwardMeta,
              String(id.rawValue), String(clock.now())]) { [self] reply in
            guard case .integer = reply else { return completion(.failure(failure(reply))) }
            completion(.success(()))
        }
    }

    public func pendingForwards(completion: @escaping StoreCompletion<[PendingForward]>) {
        send(["EVAL", RedisSchema.pendingForwards, "2", schema.forwards, schema.forwardMeta]) { [self] reply in
            guard case .array(let parts?) = reply, parts.count == 2,
                  let payloads = RedisSchema.pairs(parts[0]), let meta = RedisSchema.pairs(parts[1])
            else { return completion(.failure(failure(reply))) }
            completion(.success(Self.forwards(payloads, meta)))
        }
    }

    static func forwards(_ payloads: [([UInt8], [UInt8])], _ meta: [([UInt8], [UInt8])]) -> [PendingForward] {
        var facts: [UInt64: (Int64, UInt32, Int64)] = [:]
        for (key, value) in meta {
            let fields = value.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            guard let id = RedisSchema.number(key[...]), fields.count == 3,
                  let enqueued = RedisSchema.number(fields[0]), let attempts = RedisSchema.number(fields[1]),
                  let last = RedisSchema.number(fields[2]) else { continue }
            facts[UInt64(id)] = (enqueued, UInt32(clamping: attempts), last)
        }
        return payloads.compactMap { key, payload -> PendingForward? in
            guard let id = RedisSchema.number(key[...]), id > 0 else { return nil }
            let fact = facts[UInt64(id)] ?? (0, 0, 0)
            return PendingForward(id: ForwardID(rawValue: UInt64(id)), payload: payload, enqueuedAt: fact.0,
                                  attempts: fact.1, lastAttemptAt: fact.2 > 0 ? fact.2 : nil)
        }.sorted { $0.id < $1.id }
    }

    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        sync?.stop()
    }
}

/// The Redis store's counters, written from any loop, read by `/metrics`.
final class RedisCounters: Sendable {
    let commands = Atomic<UInt64>(0)
    let failures = Atomic<UInt64>(0)
    let milliseconds = Atomic<UInt64>(0)
    let messages = Atomic<UInt64>(0)
    let resyncs = Atomic<UInt64>(0)

    func record(ms: Int64, ok: Bool) {
        if ok {
            commands.add(1, ordering: .relaxed)
            milliseconds.add(UInt64(max(0, ms)), ordering: .relaxed)
        } else {
            failures.add(1, ordering: .relaxed)
        }
    }

    func snapshot(revocations: RevocationSet) -> StoreMetrics {
        var metrics = StoreMetrics()
        let counts = revocations.counts
        metrics.revokedSessions = UInt64(counts.sessions)
        metrics.revokedSubjects = UInt64(counts.subjects)
        metrics.remoteCommands = commands.load(ordering: .relaxed)
        metrics.remoteCommandFailures = failures.load(ordering: .relaxed)
        metrics.remoteCommandMillisecondsTotal = milliseconds.load(ordering: .relaxed)
        metrics.remoteMessages = messages.load(ordering: .relaxed)
        metrics.remoteResyncs = resyncs.load(ordering: .relaxed)
        return metrics
    }
}

extension RedisStore {
    /// Connects and waits (up to `timeoutMs`) for the first outcome: a refusal that
    /// configuration must fix (a wrong password, an untrusted certificate) is an error; an
    /// unreachable Redis is not — the sidecar starts unready and keeps trying.
    public static func open(
        _ endpoint: RedisEndpoint, limits: StoreLimits = StoreLimits(), clock: StoreClock = .system, timeoutMs: Int = 3_000,
        onReadinessChange: @escaping @Sendable (Bool, String) -> Void,
        onNotice: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(StoreError) -> RedisStore {
        let store = try RedisStore(endpoint: endpoint, limits: limits, clock: clock, onReadinessChange: onReadinessChange,
                                   onNotice: onNotice)
        let sync = try RedisSync(store: store)
        store.sync = sync
        try sync.start()
        var waited = 0
        while waited < timeoutMs {
            if let outcome = sync.firstOutcome.withLock({ $0 }) {
                if outcome.hasPrefix("authentication failed") || outcome.hasPrefix("Redis refused")
                    || outcome.hasPrefix("TLS certificate") || outcome.hasPrefix("no sentinel knows a master") {
                    store.close()
                    throw .unavailable("\(endpoint.description): \(outcome)")
                }
                break
            }
            usleep(20_000)
            waited += 20
        }
        return store
    }
}
