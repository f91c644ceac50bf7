import COpenSSL
import Glibc
import SidecarEvent
import SidecarRESP

/// One connection to Redis on one event loop: commands are pipelined and answered in
/// order (RESP is strictly FIFO), a lost or slow connection fails what is pending at once
/// (the callers answer 503) and reconnects with back-off. A command sent while a connection is
/// being made waits for it (within the same deadline as the set-up), so the first sign-ins after
/// a start or a reconnection are not refused; while backing off it fails at once. Used on its
/// loop's thread only.
final class RedisConnection {
    enum State: Equatable {
        case connecting
        case ready
        case down(String)
    }

    /// What the connection is for: commands, or the pub/sub subscription of `channel`.
    enum Role {
        case commands
        case subscriber(channel: String)
    }

    /// What is sent before the connection counts as ready.
    struct Handshake {
        var password: [UInt8]?
        /// The setting an operator fixes when the password is refused.
        var passwordSetting = "revocations.password"
        var database = 0
        /// Ask `ROLE` and refuse anything but a master: behind Sentinel the address may be
        /// stale, and nothing may be written to a replica.
        var requireMaster = false
    }

    private let loop: EventLoop
    private let handshake: Handshake
    private let tls: TLSClientContext?
    private let role: Role
    /// The server to dial (resolved on the store's thread; names are not resolved here
    /// because a worker loop must never block on DNS).
    private let peer: () -> RedisPeer?
    private var connectedPeer: RedisPeer?
    /// Checks of the handshake's replies, in order; a failing check names why.
    private var handshakeChecks: [(RESPValue) -> String?] = []
    private var socket: ClientSocket?
    private var pending: [(sentMs: Int64, reply: (RESPValue?) -> Void)] = []
    /// Commands sent while the connection was being made, written once it is ready. The
    /// set-up's own deadline (the oldest entry of `pending`) bounds how long they wait.
    private var awaitingConnection: [(sentMs: Int64, command: [UInt8], reply: (RESPValue?) -> Void)] = []
    /// At most this many wait for a connection being made; more fail at once, as while down.
    static let maximumAwaitingConnection = 4_096
    private var pendingHead = 0
    private var handshakeReplies = 0
    private let parser = RESPParser()
    private var backoffMs: Int64 = 100
    private var reconnect: Timer?
    private var watchdog: Timer?
    private(set) var state: State = .connecting
    /// A reply to a handshake command that was an error (a wrong password): said once.
    private(set) var lastHandshakeError: String?

    /// How long the oldest command may wait for its answer before the connection is
    /// treated as failed (a Redis that is stopped or swapping must not hold sign-ins).
    var commandTimeoutMs: Int64 = 2_000
    /// Why there is nothing to dial while `peer` has no server.
    var unresolvedReason = "no address for Redis yet"
    /// Reconnect attempts back off from 100 ms, doubling up to this.
    var maximumBackoffMs: Int64 = 5_000

    /// State changes (for health and the log), pub/sub messages, and command latencies.
    var onStateChange: ((State) -> Void)?
    var onMessage: (([UInt8]) -> Void)?
    var onLatency: ((Int64, Bool) -> Void)?
    /// A command was refused with `-READONLY`: the server became a replica under us.
    var onReadOnly: (() -> Void)?
    /// Which master the store believes in now (it changes when Sentinel moves the master): a
    /// connection made under an older one is remade before its next command.
    var masterGeneration: (() -> UInt64)?
    private var connectedGeneration: UInt64 = 0

    init(loop: EventLoop, handshake: Handshake, tls: TLSClientContext?, role: Role, peer: @escaping () -> RedisPeer?) {
        self.loop = loop
        self.handshake = handshake
        self.tls = tls
        self.role = role
        self.peer = peer
        reconnect = Timer(loop: loop) { [unowned self] in self.connect() }
        watchdog = Timer(loop: loop) { [unowned self] in self.checkDeadline() }
    }

    deinit { closeSocket() }

    var isReady: Bool { state == .ready }

    /// Sends `command`; `reply` gets the answer, or nil when the connection is not ready
    /// or fails before answering — on a later turn of the loop, never before this returns.
    func send(_ command: [UInt8], reply: @escaping (RESPValue?) -> Void) {
        if let generation = masterGeneration?(), generation != connectedGeneration {
            reconnectNow(because: "the master moved")
        }
        if state == .connecting, socket != nil, awaitingConnection.count < Self.maximumAwaitingConnection {
            awaitingConnection.append((loop.nowMilliseconds, command, reply))
            return
        }
        guard state == .ready, let socket, socket.write(command) else {
            onLatency?(0, false)
            return loop.nextTurn.run { reply(nil) }
        }
        pending.append((loop.nowMilliseconds, reply))
        if watchdog?.isScheduled == false { watchdog?.schedule(afterMilliseconds: 250) }
    }

    func start() { connect() }

    /// Drops the connection (failing what is pending) and dials again at once: the master
    /// moved, so neither the old connection nor the back-off toward it is worth keeping.
    func reconnectNow(because reason: String) {
        reconnect?.cancel()
        backoffMs = 100
        fail(reason, retry: false)
        connect()
    }

    func stop() {
        reconnect?.cancel()
        watchdog?.cancel()
        fail("stopped", retry: false)
    }

    // MARK: connecting

    private func connect() {
        closeSocket()
        connectedGeneration = masterGeneration?() ?? 0
        guard let target = peer() else { return failed(unresolvedReason) }
        connectedPeer = target
        let socket: ClientSocket
        do {
            socket = try ClientSocket(base: loop.base, tls: tls, host: target.host, isIPLiteral: target.isIPLiteral)
        } catch {
            return failed(error == .tls ? "TLS set-up failed" : "cannot create a socket")
        }
        socket.onReadable = { [unowned self] in self.readable() }
        socket.onEvent = { [unowned self] in self.event($0) }
        self.socket = socket
        setState(.connecting)
        if !socket.connect(to: target.address) { return failed("connect to \(target) failed") }
        // The handshake has the command deadline too: a port that accepts and never answers.
        pending.append((loop.nowMilliseconds, { _ in }))
        handshakeReplies = -1  // the placeholder above, removed on connect
        watchdog?.schedule(afterMilliseconds: 250)
    }

    private func event(_ event: ClientSocket.Event) {
        guard let socket else { return }
        if event == .connected {
            pending.removeAll()
            pendingHead = 0
            var commands: [[UInt8]] = []
            handshakeChecks = []
            let passwordSetting = handshake.passwordSetting
            let anyError: (RESPValue) -> String? = { reply in
                guard case .error(let message) = reply else { return nil }
                return Self.handshakeFailure(message, passwordSetting: passwordSetting)
            }
            if let password = handshake.password {
                commands.append(RESP.command([Array("AUTH".utf8), password]))
                handshakeChecks.append(anyError)
            }
            if handshake.database != 0 {
                commands.append(RESP.command("SELECT", String(handshake.database)))
                handshakeChecks.append(anyError)
            }
            // Before SUBSCRIBE: a subscribed connection may not ask anything else.
            if handshake.requireMaster, let server = connectedPeer {
                commands.append(RESP.command("ROLE"))
                handshakeChecks.append { reply in
                    anyError(reply) ?? SentinelReplies.roleRefusal(reply).map { "\(server) \($0)" }
                }
            }
            if case .subscriber(let channel) = role {
                commands.append(RESP.command("SUBSCRIBE", channel))
                handshakeChecks.append(anyError)
            }
            commands.append(RESP.command("PING"))
            handshakeChecks.append(anyError)
            handshakeReplies = commands.count
            for command in commands {
                _ = socket.write(command)
                pending.append((loop.nowMilliseconds, { _ in }))
            }
            _ = socket.startReading()
            return
        }
        var reason: String
        switch event {
        case .failed(let code): reason = "connection failed (\(String(cString: strerror(code))))"
        default: reason = "connection closed by \(connectedPeer.map { "\($0)" } ?? "Redis")"
        }
        if tls != nil, let ssl = socket.ssl, SSL_get_verify_result(ssl) != X509_V_OK {
            reason = "TLS certificate not trusted (verify error \(SSL_get_verify_result(ssl)))"
        }
        failed(reason)
    }

    private func readable() {
        guard let input = socket?.input else { return }
        while true {
            guard let outcome = input.withPrefix(max: input.count, { parser.parse($0) }) else { return }
            switch outcome {
            case .incomplete:
                return
            case .invalid(let why):
                return failed("invalid reply from Redis: \(why)")
            case .value(let value, let consumed):
                input.drain(consumed)
                deliver(value)
                if socket == nil { return }
            }
        }
    }

    private func deliver(_ value: RESPValue) {
        if case .subscriber = role, handshakeReplies == 0, case .array(let parts?) = value, parts.count == 3,
           parts[0].bytes == Array("message".utf8), let payload = parts[2].bytes {
            onMessage?(payload)
            return
        }
        guard pendingHead < pending.count else { return failed("a reply nobody asked for") }
        let entry = pending[pendingHead]
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        }
        if handshakeReplies > 0 {
            let check = handshakeChecks[handshakeChecks.count - handshakeReplies]
            handshakeReplies -= 1
            if let refusal = check(value) {
                lastHandshakeError = refusal
                return failed(refusal)
            }
            if handshakeReplies == 0 {
                backoffMs = 100
                lastHandshakeError = nil
                // Before the state change is announced: a command its listeners send then must
                // not overtake those that waited.
                writeAwaitingConnection()
                setState(.ready)
            }
            return
        }
        onLatency?(loop.nowMilliseconds - entry.sentMs, !value.isError)
        entry.reply(value)
        if case .error(let message) = value, message.hasPrefix("READONLY"), socket != nil {
            // Demoted under us: whatever is pipelined behind this fails now too, and the
            // store asks the sentinels where the master went.
            failed("\(connectedPeer.map { "\($0)" } ?? "Redis") is a replica now (READONLY)")
            onReadOnly?()
        }
    }

    static func handshakeFailure(_ message: String, passwordSetting: String = "revocations.password") -> String {
        if message.hasPrefix("WRONGPASS") || message.hasPrefix("NOAUTH") || message.contains("AUTH") {
            return "authentication failed: \(message) (check \(passwordSetting))"
        }
        return "Redis refused the connection set-up: \(message)"
    }

    /// What was sent while connecting, in order, now that the handshake is answered; each
    /// keeps the time it was sent, so the command deadline counts from then.
    private func writeAwaitingConnection() {
        guard !awaitingConnection.isEmpty else { return }
        let waiting = awaitingConnection
        awaitingConnection.removeAll()
        for (index, entry) in waiting.enumerated() {
            guard let socket, socket.write(entry.command) else {
                let unsent = waiting[index...].map(\.reply)
                return loop.nextTurn.run { [onLatency] in
                    for reply in unsent {
                        onLatency?(0, false)
                        reply(nil)
                    }
                }
            }
            pending.append((entry.sentMs, entry.reply))
        }
        if watchdog?.isScheduled == false { watchdog?.schedule(afterMilliseconds: 250) }
    }

    // MARK: failing

    private func checkDeadline() {
        guard pendingHead < pending.count else { return }
        let age = loop.nowMilliseconds - pending[pendingHead].sentMs
        if age >= commandTimeoutMs {
            return failed(state == .ready ? "no answer within \(commandTimeoutMs) ms" : "connection set-up timed out")
        }
        watchdog?.schedule(afterMilliseconds: 250)
    }

    private func failed(_ reason: String) { fail(reason, retry: true) }

    private func fail(_ reason: String, retry: Bool) {
        closeSocket()
        let waiting = pending[pendingHead...].map(\.reply) + awaitingConnection.map(\.reply)
        pending.removeAll()
        awaitingConnection.removeAll()
        pendingHead = 0
        handshakeReplies = 0
        setState(.down(reason))
        for reply in waiting {
            onLatency?(0, false)
            reply(nil)
        }
        if retry {
            reconnect?.schedule(afterMilliseconds: backoffMs)
            backoffMs = min(backoffMs * 2, maximumBackoffMs)
        }
    }

    private func setState(_ new: State) {
        guard new != state else { return }
        state = new
        onStateChange?(new)
    }

    private func closeSocket() { socket = nil }
}
