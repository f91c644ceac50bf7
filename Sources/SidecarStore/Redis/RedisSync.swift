import Glibc
import SidecarEvent
import SidecarRESP
import Synchronization

/// The store's own thread: resolves Redis's address for every connection (behind Sentinel:
/// finds the master and follows it across failovers), holds the pub/sub subscription that
/// brings other replicas' revocations into memory, resyncs everything on each (re)connect,
/// and decides readiness (a command connection pinging once a second, so a Redis that stops
/// answering is noticed even when nobody signs in).
final class RedisSync: @unchecked Sendable {
    private unowned let store: RedisStore
    private var loop: EventLoop!
    private var subscriber: RedisConnection!
    private var commands: RedisConnection!
    private var pinger: Timer!
    private var stopWakeup: Wakeup!
    private let stopChannel: WakeupChannel
    private var rediscoverWakeup: Wakeup!
    /// Rung by a worker whose command met `-READONLY`: the master moved.
    let rediscoverChannel: WakeupChannel
    private var discovery: SentinelDiscovery?
    /// Why the sentinels named no master, while that lasts.
    private var sentinelProblem: String?
    private var connectionsStarted = false
    private var thread: WorkerThread?
    /// The first outcome (ready, or the reason it is not), for the start-up check.
    let firstOutcome = Mutex<String?>(nil)

    init(store: RedisStore) throws(StoreError) {
        self.store = store
        do {
            stopChannel = try WakeupChannel()
            rediscoverChannel = try WakeupChannel()
        } catch {
            throw .unavailable("cannot create the store thread's wake-up: \(error)")
        }
    }

    func start() throws(StoreError) {
        do {
            thread = try WorkerThread { [self] in run() }
        } catch {
            throw .unavailable("cannot start the store thread: \(error)")
        }
    }

    func stop() {
        stopChannel.notify()
        thread?.join()
        thread = nil
    }

    private func run() {
        guard let loop = try? EventLoop() else {
            firstOutcome.withLock { $0 = "cannot create an event loop" }
            return
        }
        self.loop = loop
        let peer: () -> RedisPeer? = { [store] in store.resolved.withLock { $0 } }
        let handshake = store.dataHandshake
        subscriber = RedisConnection(loop: loop, handshake: handshake, tls: store.tls,
                                     role: .subscriber(channel: store.schema.channel), peer: peer)
        commands = RedisConnection(loop: loop, handshake: handshake, tls: store.tls, role: .commands, peer: peer)
        commands.commandTimeoutMs = 1_500
        subscriber.unresolvedReason = store.unresolvedReason
        commands.unresolvedReason = store.unresolvedReason
        commands.onReadOnly = { [unowned self] in resolve() }
        subscriber.onMessage = { [unowned self] payload in apply(payload) }
        subscriber.onStateChange = { [unowned self] state in
            if state == .ready { resync() }
            if case .down = state { resolve() }
            judge()
        }
        commands.onStateChange = { [unowned self] state in
            // Both links were remade together (the master moved): the subscriber's resync
            // found this one still connecting, so resync now rather than after its retry.
            if state == .ready, subscriber.isReady, !synced { resync() }
            judge()
        }
        pinger = Timer(loop: loop) { [unowned self] in ping() }
        stopWakeup = Wakeup(loop: loop, channel: stopChannel) { [unowned self] in
            discovery?.stop()
            subscriber.stop()
            commands.stop()
            pinger.cancel()
            self.loop.stop()
        }
        rediscoverWakeup = Wakeup(loop: loop, channel: rediscoverChannel) { [unowned self] in resolve() }
        if let sentinels = store.endpoint.sentinels {
            // The data connections wait for the first master the sentinels name, so that
            // start-up reports what the sentinels said (an unknown master name is an error).
            let discovery = SentinelDiscovery(
                loop: loop, nodes: sentinels.nodes, masterName: sentinels.masterName,
                password: store.endpoint.sentinelPassword, tls: store.tls)
            discovery.onOutcome = { [unowned self] outcome in discovered(outcome) }
            discovery.onSwitch = { [unowned self] old, new in
                adopt(new, notice: "redis sentinel: master \"\(sentinels.masterName)\" switched from \(old) to \(new)")
            }
            self.discovery = discovery
            discovery.start()
        } else {
            resolve()
            startConnections()
        }
        loop.run()
        discovery = nil
        subscriber = nil
        commands = nil
        pinger = nil
        stopWakeup = nil
        rediscoverWakeup = nil
    }

    private func startConnections() {
        guard !connectionsStarted else { return }
        connectionsStarted = true
        subscriber.start()
        commands.start()
        pinger.schedule(afterMilliseconds: 1_000)
    }

    /// Where Redis is now: the sentinels are asked (the answer comes later), or the name
    /// is looked up — getaddrinfo, here and only here: this thread may block on DNS, the
    /// workers may not.
    private func resolve() {
        if let discovery { return discovery.discover() }
        guard case .server(let host, let port) = store.endpoint.location,
              let peer = RedisPeer.resolve(host: host, port: port) else { return }
        store.resolved.withLock { $0 = peer }
    }

    private func discovered(_ outcome: SentinelDiscovery.Outcome) {
        switch outcome {
        case .found(let master, let sentinel):
            sentinelProblem = nil
            let name = store.endpoint.sentinels?.masterName ?? ""
            let placement = store.resolved.withLock { $0 }.map { "moved from \($0) to" } ?? "is at"
            adopt(master, notice: "redis sentinel: master \"\(name)\" \(placement) \(master) (said sentinel \(sentinel))")
        case .failed(let reason, _):
            sentinelProblem = reason
            judge()
        }
    }

    /// Makes `master` the address every connection dials. When it changed, the store's
    /// own connections are remade at once and the workers' before their next command.
    private func adopt(_ master: RedisPeer, notice: String) {
        let previous = store.resolved.withLock { current in
            defer { current = master }
            return current
        }
        if previous == master { return startConnections() }
        store.masterGeneration.add(1, ordering: .relaxed)
        store.onNotice(notice)
        guard connectionsStarted else { return startConnections() }
        subscriber.reconnectNow(because: "the master moved to \(master)")
        commands.reconnectNow(because: "the master moved to \(master)")
    }

    private func ping() {
        commands.send(RESP.command("PING")) { [weak self] _ in self?.judge() }
        pinger.schedule(afterMilliseconds: 1_000)
    }

    private func apply(_ payload: [UInt8]) {
        guard let message = RedisSchema.decode(payload) else { return }
        let now = store.clock.now()
        switch message {
        case .session(let id, let expiresAt): store.revocations.revokeSession(id, until: expiresAt, now: now)
        case .subject(let subject, let revocation): store.revocations.revokeSubject(subject, revocation, now: now)
        }
        store.counters.messages.add(1, ordering: .relaxed)
    }

    /// Everything Redis holds, merged into memory (after subscribing, so nothing published
    /// between the two is lost).
    private func resync() {
        let schema = store.schema
        commands.send(RESP.command("EVAL", RedisSchema.resync, "2", schema.sessions, schema.subjects,
                                   String(store.clock.now()))) { [weak self] reply in
            guard let self else { return }
            guard case .array(let parts?) = reply, parts.count == 2,
                  let sessions = RedisSchema.pairs(parts[0]), let subjects = RedisSchema.pairs(parts[1]) else {
                // Not ready until a resync succeeded: try again shortly.
                judge()
                DispatchRetry.after(loop: loop, ms: 500) { [weak self] in self?.resync() }
                return
            }
            var revokedSessions: [Key128: Int64] = [:]
            for (key, value) in sessions {
                if let id = Key128(hex: key), let expiry = RedisSchema.number(value[...]) { revokedSessions[id] = expiry }
            }
            var revokedSubjects: [String: SubjectRevocation] = [:]
            for (key, value) in subjects {
                let fields = value.split(separator: UInt8(ascii: ":"))
                guard fields.count == 2, let cutoff = RedisSchema.number(fields[0]), let keep = RedisSchema.number(fields[1])
                else { continue }
                revokedSubjects[String(decoding: key, as: UTF8.self)] = SubjectRevocation(cutoffMs: cutoff, keepUntil: keep)
            }
            store.revocations.merge(sessions: revokedSessions, subjects: revokedSubjects, now: store.clock.now())
            store.counters.resyncs.add(1, ordering: .relaxed)
            synced = true
            judge()
        }
    }

    private var synced = false

    /// Ready when subscribed, resynced and answering pings. Said once per change: "ready",
    /// or the first definite reason it is not (retries with the same outcome say nothing).
    private func judge() {
        if case .down = subscriber.state { synced = false }
        let ready = subscriber.isReady && commands.isReady && synced
        var reason: String?
        if case .down(let why) = subscriber.state { reason = why }
        else if case .down(let why) = commands.state { reason = why }
        if !ready, let sentinelProblem { reason = sentinelProblem }
        store.state.withLock { $0 = ready ? .ready : .unavailable(reason ?? (subscriber.isReady ? "resyncing" : "connecting")) }
        if ready {
            firstOutcome.withLock { if $0 == nil { $0 = "" } }
            if announced != "ready" {
                announced = "ready"
                store.onReadinessChange(true, "ready")
            }
        } else if let reason {
            firstOutcome.withLock { if $0 == nil { $0 = reason } }
            if announced == nil || announced == "ready" {
                announced = reason
                store.onReadinessChange(false, reason)
            }
        }
    }

    private var announced: String?
}

/// A one-shot callback on a loop after a delay.
enum DispatchRetry {
    static func after(loop: EventLoop, ms: Int64, _ body: @escaping () -> Void) {
        var timer: Timer?
        timer = Timer(loop: loop) {
            body()
            timer = nil
        }
        timer?.schedule(afterMilliseconds: ms)
    }
}
