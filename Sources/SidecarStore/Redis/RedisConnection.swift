import COpenSSL
import Glibc
import SidecarEvent

/// Where and how to reach Redis (`revocations.store`, `.password`, `.ca_file`).
public struct RedisEndpoint: Sendable {
    public var host: String
    public var port: UInt16
    public var database: Int
    /// `rediss://`: TLS, verified like the Apple client (system roots plus `caFile`).
    public var tls: Bool
    public var caFile: String?
    public var password: [UInt8]?
    public var keyPrefix: String

    public init(host: String, port: UInt16, database: Int, tls: Bool, caFile: String? = nil,
                password: [UInt8]? = nil, keyPrefix: String = "sidecar:") {
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
        self.caFile = caFile
        self.password = password
        self.keyPrefix = keyPrefix
    }

    public var description: String { "\(tls ? "rediss" : "redis")://\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)" }

    var isIPLiteral: Bool { (try? SocketAddress(host: host, port: port)) != nil }
}

/// One connection to Redis on one event loop: commands are pipelined and answered in
/// order (RESP is strictly FIFO), a lost or slow connection fails what is pending at once
/// (the callers answer 503) and reconnects with back-off. Used on its loop's thread only.
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

    private let loop: EventLoop
    private let endpoint: RedisEndpoint
    private let tls: TLSClientContext?
    private let role: Role
    /// The address to dial (resolved on the store's thread; names are not resolved here
    /// because a worker loop must never block on DNS).
    private let address: () -> SocketAddress?
    private var socket: ClientSocket?
    private var pending: [(sentMs: Int64, reply: (RESPValue?) -> Void)] = []
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
    /// Reconnect attempts back off from 100 ms, doubling up to this.
    var maximumBackoffMs: Int64 = 5_000

    /// State changes (for health and the log), pub/sub messages, and command latencies.
    var onStateChange: ((State) -> Void)?
    var onMessage: (([UInt8]) -> Void)?
    var onLatency: ((Int64, Bool) -> Void)?

    init(loop: EventLoop, endpoint: RedisEndpoint, tls: TLSClientContext?, role: Role, address: @escaping () -> SocketAddress?) {
        self.loop = loop
        self.endpoint = endpoint
        self.tls = tls
        self.role = role
        self.address = address
        reconnect = Timer(loop: loop) { [unowned self] in self.connect() }
        watchdog = Timer(loop: loop) { [unowned self] in self.checkDeadline() }
    }

    deinit { closeSocket() }

    var isReady: Bool { state == .ready }

    /// Sends `command`; `reply` gets the answer, or nil when the connection is not ready
    /// or fails before answering — on a later turn of the loop, never before this returns.
    func send(_ command: [UInt8], reply: @escaping (RESPValue?) -> Void) {
        guard state == .ready, let socket, socket.write(command) else {
            onLatency?(0, false)
            return loop.nextTurn.run { reply(nil) }
        }
        pending.append((loop.nowMilliseconds, reply))
        if watchdog?.isScheduled == false { watchdog?.schedule(afterMilliseconds: 250) }
    }

    func start() { connect() }

    func stop() {
        reconnect?.cancel()
        watchdog?.cancel()
        fail("stopped", retry: false)
    }

    // MARK: connecting

    private func connect() {
        closeSocket()
        guard let target = address() else { return failed("cannot resolve \(endpoint.host)") }
        let socket: ClientSocket
        do {
            socket = try ClientSocket(base: loop.base, tls: tls, host: endpoint.host, isIPLiteral: endpoint.isIPLiteral)
        } catch {
            return failed(error == .tls ? "TLS set-up failed" : "cannot create a socket")
        }
        socket.onReadable = { [unowned self] in self.readable() }
        socket.onEvent = { [unowned self] in self.event($0) }
        self.socket = socket
        setState(.connecting)
        if !socket.connect(to: target) { return failed("connect to \(target) failed") }
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
            var handshake: [[UInt8]] = []
            if let password = endpoint.password { handshake.append(RESP.command([Array("AUTH".utf8), password])) }
            if endpoint.database != 0 { handshake.append(RESP.command("SELECT", String(endpoint.database))) }
            if case .subscriber(let channel) = role { handshake.append(RESP.command("SUBSCRIBE", channel)) }
            handshake.append(RESP.command("PING"))
            handshakeReplies = handshake.count
            for command in handshake {
                _ = socket.write(command)
                pending.append((loop.nowMilliseconds, { _ in }))
            }
            _ = socket.startReading()
            return
        }
        var reason: String
        switch event {
        case .failed(let code): reason = "connection failed (\(String(cString: strerror(code))))"
        default: reason = "connection closed by Redis"
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
            handshakeReplies -= 1
            if case .error(let message) = value {
                lastHandshakeError = message
                return failed(Self.handshakeFailure(message))
            }
            if handshakeReplies == 0 {
                backoffMs = 100
                lastHandshakeError = nil
                setState(.ready)
            }
            return
        }
        onLatency?(loop.nowMilliseconds - entry.sentMs, !value.isError)
        entry.reply(value)
    }

    static func handshakeFailure(_ message: String) -> String {
        if message.hasPrefix("WRONGPASS") || message.hasPrefix("NOAUTH") || message.contains("AUTH") {
            return "authentication failed: \(message) (check revocations.password)"
        }
        return "Redis refused the connection set-up: \(message)"
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
        let waiting = pending[pendingHead...].map(\.reply)
        pending.removeAll()
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
