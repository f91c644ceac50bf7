import Glibc
import SidecarEvent
import Synchronization

/// The store's own thread: resolves Redis's address for every connection, holds the pub/sub
/// subscription that brings other replicas' revocations into memory, resyncs everything on
/// each (re)connect, and decides readiness (a command connection pinging once a second, so
/// a Redis that stops answering is noticed even when nobody signs in).
final class RedisSync: @unchecked Sendable {
    private unowned let store: RedisStore
    private var loop: EventLoop!
    private var subscriber: RedisConnection!
    private var commands: RedisConnection!
    private var pinger: Timer!
    private var stopWakeup: Wakeup!
    private let stopChannel: WakeupChannel
    private var thread: WorkerThread?
    /// The first outcome (ready, or the reason it is not), for the start-up check.
    let firstOutcome = Mutex<String?>(nil)

    init(store: RedisStore) throws(StoreError) {
        self.store = store
        do { stopChannel = try WakeupChannel() } catch { throw .unavailable("cannot create the store thread's wake-up: \(error)") }
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
        resolve()
        let address: () -> SocketAddress? = { [store] in store.resolved.withLock { $0 } }
        subscriber = RedisConnection(loop: loop, endpoint: store.endpoint, tls: store.tls,
                                     role: .subscriber(channel: store.schema.channel), address: address)
        commands = RedisConnection(loop: loop, endpoint: store.endpoint, tls: store.tls, role: .commands, address: address)
        commands.commandTimeoutMs = 1_500
        subscriber.onMessage = { [unowned self] payload in apply(payload) }
        subscriber.onStateChange = { [unowned self] state in
            if state == .ready { resync() }
            if case .down = state { resolve() }
            judge()
        }
        commands.onStateChange = { [unowned self] _ in judge() }
        pinger = Timer(loop: loop) { [unowned self] in ping() }
        stopWakeup = Wakeup(loop: loop, channel: stopChannel) { [unowned self] in
            subscriber.stop()
            commands.stop()
            pinger.cancel()
            self.loop.stop()
        }
        subscriber.start()
        commands.start()
        pinger.schedule(afterMilliseconds: 1_000)
        loop.run()
        subscriber = nil
        commands = nil
        pinger = nil
        stopWakeup = nil
    }

    /// getaddrinfo, here and only here: this thread may block on DNS, the workers may not.
    private func resolve() {
        let endpoint = store.endpoint
        if let literal = try? SocketAddress(host: endpoint.host, port: endpoint.port) {
            store.resolved.withLock { $0 = literal }
            return
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(endpoint.host, String(endpoint.port), &hints, &result) == 0, let first = result else { return }
        defer { freeaddrinfo(result) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        let address = SocketAddress(storage: storage, length: first.pointee.ai_addrlen)
        store.resolved.withLock { $0 = address }
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
