import SidecarEvent
import SidecarRESP

/// Finds the master through Redis Sentinel, on the store's own thread (names are resolved
/// here, where blocking on DNS harms no request): asks the sentinels in turn
/// (`SENTINEL get-master-addr-by-name`) until one names the master, and keeps a
/// subscription to `+switch-master` on one of them, so that a failover is heard as the
/// sentinels decide it rather than when a connection to the old master times out.
final class SentinelDiscovery {
    enum Outcome: Equatable {
        /// `sentinel` (host:port) says the master is at `master`.
        case found(master: RedisPeer, sentinel: String)
        /// No sentinel named the master; `unknownMaster` when one answered that it watches
        /// no master by that name (a configuration mistake, not an outage).
        case failed(reason: String, unknownMaster: Bool)
    }

    private let loop: EventLoop
    private let nodes: [RedisAddress.Node]
    private let masterName: String
    private let tls: TLSClientContext?
    private let handshake: RedisConnection.Handshake
    private var watch: RedisConnection?
    private var watchedBefore = false
    private var nextWatched = 0
    private var asking = false
    private var askAgain = false
    private var retry: Timer?
    private var stopped = false

    /// Each lookup's result; a failed one is retried every `retryMs` until one succeeds.
    var onOutcome: ((Outcome) -> Void)?
    /// A `+switch-master` for our master: where it was, and where it is now.
    var onSwitch: ((SentinelReplies.MasterAddress, RedisPeer) -> Void)?
    var retryMs: Int64 = 1_000
    /// How long one sentinel may take to connect and answer before the next is asked.
    var queryTimeoutMs: Int64 = 1_000

    /// `password`: the sentinels' own (`revocations.sentinel_password`).
    init(loop: EventLoop, nodes: [RedisAddress.Node], masterName: String, password: [UInt8]?, tls: TLSClientContext?) {
        self.loop = loop
        self.nodes = nodes
        self.masterName = masterName
        self.tls = tls
        handshake = RedisConnection.Handshake(password: password, passwordSetting: "revocations.sentinel_password")
        retry = Timer(loop: loop) { [unowned self] in discover() }
    }

    func start() {
        let watch = RedisConnection(loop: loop, handshake: handshake, tls: tls, role: .subscriber(channel: "+switch-master")) {
            [unowned self] in nextSentinelToWatch()
        }
        watch.maximumBackoffMs = 1_000
        watch.onMessage = { [unowned self] payload in heard(payload) }
        watch.onStateChange = { [unowned self] state in
            // A failover may have happened while no sentinel was watched: ask again.
            if state == .ready, watchedBefore { discover() }
            if state == .ready { watchedBefore = true }
        }
        self.watch = watch
        watch.start()
        discover()
    }

    func stop() {
        stopped = true
        retry?.cancel()
        watch?.stop()
        watch = nil
    }

    /// Asks the sentinels where the master is; a request made while a lookup is under way
    /// runs once that one ends (its answer may already be stale).
    func discover() {
        guard !stopped else { return }
        if asking {
            askAgain = true
            return
        }
        asking = true
        retry?.cancel()
        ask(index: 0, findings: [], unknown: false)
    }

    /// Each sentinel in turn, round-robin across reconnects, so one that is down is not
    /// asked for ever.
    private func nextSentinelToWatch() -> RedisPeer? {
        let node = nodes[nextWatched % nodes.count]
        nextWatched += 1
        return RedisPeer.resolve(host: node.host, port: node.port)
    }

    private func heard(_ payload: [UInt8]) {
        guard let change = SentinelReplies.switchMaster(payload), change.name == masterName else { return }
        guard let peer = RedisPeer.resolve(host: change.new.host, port: change.new.port) else {
            return discover()
        }
        onSwitch?(change.old, peer)
    }

    // MARK: one lookup

    private func ask(index: Int, findings: [String], unknown: Bool) {
        guard !stopped else { return }
        guard index < nodes.count else { return give(findings: findings, unknown: unknown) }
        let node = nodes[index]
        let label = RedisPeer.hostPort(node.host, node.port)
        guard let sentinel = RedisPeer.resolve(host: node.host, port: node.port) else {
            return ask(index: index + 1, findings: findings + ["\(label): cannot resolve the name"], unknown: unknown)
        }
        let connection = RedisConnection(loop: loop, handshake: handshake, tls: tls, role: .commands) { sentinel }
        connection.commandTimeoutMs = queryTimeoutMs
        var settled = false
        // Ends this sentinel's part: the connection is stopped on the next turn, because this
        // runs inside its own callbacks.
        let settle: (RESPValue?, String) -> Void = { [unowned self] reply, why in
            guard !settled else { return }
            settled = true
            loop.nextTurn.run {
                connection.onStateChange = nil  // it held this closure, and this closure it
                connection.stop()
            }
            answered(reply, why: why, from: label, index: index, findings: findings, unknown: unknown)
        }
        connection.onStateChange = { [unowned connection, masterName] state in
            switch state {
            case .ready:
                connection.send(RESP.command("SENTINEL", "get-master-addr-by-name", masterName)) { reply in
                    settle(reply, "no answer")
                }
            case .down(let why): settle(nil, why)
            case .connecting: break
            }
        }
        connection.start()
    }

    private func answered(
        _ reply: RESPValue?, why: String, from label: String, index: Int, findings: [String], unknown: Bool
    ) {
        guard let reply else { return ask(index: index + 1, findings: findings + ["\(label): \(why)"], unknown: unknown) }
        switch SentinelReplies.masterAddress(reply) {
        case .master(let address):
            guard let master = RedisPeer.resolve(host: address.host, port: address.port) else {
                let finding = "\(label) named \(address), which does not resolve"
                return ask(index: index + 1, findings: findings + [finding], unknown: unknown)
            }
            finish(.found(master: master, sentinel: label))
        case .unknownMaster:
            let finding = "\(label) watches no master named \"\(masterName)\""
            ask(index: index + 1, findings: findings + [finding], unknown: true)
        case .refused(let message):
            ask(index: index + 1, findings: findings + ["\(label) answered \(message)"], unknown: unknown)
        }
    }

    private func give(findings: [String], unknown: Bool) {
        let detail = findings.joined(separator: "; ")
        let reason: String
        if unknown {
            reason = "no sentinel knows a master named \"\(masterName)\" (\(detail))"
        } else if findings.allSatisfy({ $0.contains("authentication failed") }) {
            reason = "authentication failed at the sentinels (\(detail))"
        } else if findings.allSatisfy({ $0.contains("TLS certificate not trusted") }) {
            reason = "TLS certificate not trusted at the sentinels (\(detail))"
        } else {
            reason = "no sentinel named the master \"\(masterName)\" (\(detail))"
        }
        retry?.schedule(afterMilliseconds: retryMs)
        finish(.failed(reason: reason, unknownMaster: unknown))
    }

    private func finish(_ outcome: Outcome) {
        asking = false
        onOutcome?(outcome)
        if askAgain {
            askAgain = false
            discover()
        }
    }
}
