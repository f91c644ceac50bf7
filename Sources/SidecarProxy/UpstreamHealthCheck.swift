import Glibc
import Logging
import SidecarConfig
import SidecarEvent

/// Active health checks of one upstream's servers on one worker's loop: every `interval` each
/// server is asked `GET path` on a connection of its own (TLS verified as for requests), and a
/// server whose answer is missing, late or not the expected status is out (`ServerHealth`)
/// until a check passes again. Each worker checks on its own, as it balances on its own.
final class UpstreamHealthCheck {
    private let loop: EventLoop
    /// Its servers are read at each round: a name that resolves anew adds and removes some.
    private weak var group: UpstreamGroup?
    private let settings: Config.HealthCheck
    private var timer: Timer?
    private var probes: [ObjectIdentifier: HealthProbe] = [:]

    init(loop: EventLoop, group: UpstreamGroup, settings: Config.HealthCheck) {
        self.loop = loop
        self.group = group
        self.settings = settings
        timer = Timer(loop: loop) { [weak self] in self?.round() }
        round()  // at once: a server down at start is known before the first interval passes
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func round() {
        guard let group else { return stop() }
        let path = settings.path ?? "/"
        for server in group.servers where probes[ObjectIdentifier(server)] == nil {
            let id = ObjectIdentifier(server)
            let request = Array(("GET \(path) HTTP/1.1\r\nHost: \(server.hostField)\r\n"
                + "User-Agent: sidecar-health-check\r\nConnection: close\r\n\r\n").utf8)
            let probe = HealthProbe(pool: server, request: request, expected: settings.status, loop: loop,
                                    timeoutMs: settings.timeout.milliseconds) { [weak self, unowned server] healthy, reason in
                guard let self else { return }
                self.record(server, healthy: healthy, reason: reason)
                // Let go on the next turn: the probe's stream is inside its own callback now.
                self.loop.nextTurn.run { [weak self] in self?.probes[id] = nil }
            }
            probes[id] = probe
            probe.start()
        }
        timer?.schedule(afterMilliseconds: settings.interval.milliseconds)
    }

    private func record(_ pool: UpstreamPool, healthy: Bool, reason: String) {
        guard pool.health.checked(healthy: healthy) else { return }
        let metadata: Logger.Metadata = [
            "upstream_name": "\(pool.name)", "upstream": "\(String(decoding: pool.text, as: UTF8.self))",
            "path": "\(settings.path ?? "/")", "reason": "\(reason)",
        ]
        if healthy {
            Logger(label: "sidecar").info("upstream server passed its health check: back", metadata: metadata)
        } else {
            Logger(label: "sidecar").warning("upstream server failed its health check: taken out", metadata: metadata)
        }
    }
}

/// One check of one server: connect, send the request, read the status line, close. Its
/// stream is its own (not an `UpstreamConnection`: the exchanges' owner calls stay direct).
final class HealthProbe: StreamDelegate {
    private let pool: UpstreamPool
    private let request: [UInt8]
    private var stream: Stream?
    private var deadline: Timer?
    private var done: ((Bool, String) -> Void)?
    private let expected: Config.ExpectedStatus

    init(pool: UpstreamPool, request: [UInt8], expected: Config.ExpectedStatus, loop: EventLoop, timeoutMs: Int64,
         done: @escaping (Bool, String) -> Void) {
        self.pool = pool
        self.request = request
        self.expected = expected
        self.done = done
        deadline = Timer(loop: loop) { [weak self] in self?.finish(false, "no answer within the timeout") }
        deadline?.schedule(afterMilliseconds: timeoutMs)
    }

    func start() {
        var failure: Int32 = 0
        guard let stream = pool.probeStream(failure: &failure) else {
            return finish(false, "connect() failed: \(String(cString: strerror(failure)))")
        }
        self.stream = stream
        stream.delegate = self
        _ = stream.output.append(request)
    }

    func stream(_ stream: Stream, didConnect error: Int32) {
        guard error == 0 else { return finish(false, "connect failed: \(String(cString: strerror(error)))") }
        if pool.tls != nil {
            stream.startTLSHandshake()
        } else {
            send(stream)
        }
    }

    func streamDidHandshake(_ stream: Stream) { send(stream) }

    private func send(_ stream: Stream) {
        let error = stream.flush()
        if error != 0 { finish(false, String(cString: strerror(error))) }
    }

    func streamDidDrain(_ stream: Stream) {}

    func stream(_ stream: Stream, didRead count: Int, error: Int32) {
        let input = stream.input
        guard let bytes = input.unsafePrefix(min(input.count, 64)), let line = Self.statusLine(bytes) else {
            if count == 0 {
                let reason = stream.tlsFailure?.reason ?? (error != 0 ? String(cString: strerror(error)) : "closed")
                finish(false, "no status line: \(reason)")
            }
            return
        }
        guard let status = line else { return finish(false, "not an HTTP response") }
        finish(expected.accepts(status), "status \(status)")
    }

    /// nil: more bytes needed; .some(nil): not a status line; the status otherwise.
    static func statusLine(_ bytes: UnsafeRawBufferPointer) -> Int?? {
        guard let end = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return bytes.count >= 64 ? .some(nil) : nil }
        let line = String(decoding: bytes[..<end], as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            return .some(nil)
        }
        return .some(status)
    }

    private func finish(_ healthy: Bool, _ reason: String) {
        guard let done else { return }
        self.done = nil
        deadline?.cancel()
        stream?.close()
        done(healthy, reason)
    }
}
