import Logging

/// Passive health of one server of an upstream, as one worker sees it: taken out after
/// `max_fails` connections in a row that it refused, reset or left unanswered (or whose TLS it failed), for
/// `fail_timeout`; then one request at a time tries it again ("alone"), and a whole response
/// brings it back. Each worker learns on its own, as nginx's workers do without a shared zone.
struct ServerHealth {
    enum State: Equatable {
        case up
        /// Out until this time (loop milliseconds).
        case out(untilMs: Int64)
        /// One exchange is trying it again since this time.
        case trying(sinceMs: Int64)
    }

    private(set) var state = State.up
    /// Failures since the last response.
    private(set) var failures = 0
    /// Its last active health check failed (`UpstreamHealthCheck`): out until one passes.
    private(set) var failedCheck = false

    /// An active check's verdict. True when it changes whether the server is in.
    mutating func checked(healthy: Bool) -> Bool {
        defer { failedCheck = !healthy }
        return failedCheck == healthy
    }

    /// Whether a new exchange may go to it now (a server whose time out is over may: that
    /// exchange is then the one trying it, `startTrying`).
    func isAvailable(nowMs: Int64, tryWindowMs: Int64) -> Bool {
        if failedCheck { return false }
        switch state {
        case .up: return true
        case .out(let until): return nowMs >= until
        case .trying(let since): return nowMs - since >= tryWindowMs  // the try never reported back
        }
    }

    /// The server is back from its time out: the exchange choosing it is the one trying it.
    mutating func chosen(nowMs: Int64) {
        if case .up = state { return }
        state = .trying(sinceMs: nowMs)
    }

    /// A connection refused, reset or failed before any response byte. True when this takes
    /// the server out (the caller says so in the log).
    mutating func failed(nowMs: Int64, maxFails: Int, outMs: Int64) -> Bool {
        failures += 1
        switch state {
        case .trying:
            state = .out(untilMs: nowMs + outMs)
            return true
        case .up where maxFails > 0 && failures >= maxFails:
            state = .out(untilMs: nowMs + outMs)
            return true
        default:
            return false
        }
    }

    /// A response came whole. True when this brings the server back.
    @inline(__always)
    mutating func answered() -> Bool {
        guard failures != 0 || state != .up else { return false }
        failures = 0
        let wasOut = state != .up
        state = .up
        return wasOut
    }

    var isUp: Bool { state == .up }
}

/// What a server's exchanges tell its health. Only a server with siblings keeps count: one
/// alone is tried whatever it did last.
extension UpstreamPool {
    /// A connection refused or reset, or failed TLS, before any response byte.
    func serverFailed(nowMs: Int64) {
        guard let balancing, health.failed(nowMs: nowMs, maxFails: balancing.maxFails, outMs: balancing.failTimeout.milliseconds)
        else { return }
        Logger(label: "sidecar").warning(
            "upstream server taken out after \(health.failures) failed connection(s) in a row; one request tries it again in \(balancing.failTimeout)",
            metadata: ["upstream_name": "\(name)", "upstream": "\(String(decoding: text, as: UTF8.self))"])
    }

    /// A response came whole.
    @inline(__always)
    func serverAnswered() {
        guard balancing != nil, health.answered() else { return }
        Logger(label: "sidecar").info(
            "upstream server back: it answered again",
            metadata: ["upstream_name": "\(name)", "upstream": "\(String(decoding: text, as: UTF8.self))"])
    }
}
