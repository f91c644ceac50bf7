import SidecarEvent
import SidecarHTTP

/// The exchange's leg to its upstream: which upstream the request goes to, the pooled
/// connection leased for it (given back to its pool as the exchange ends), its place in the
/// queue while no connection may be had, and a copy of a small body to send again on
/// another connection. Stored inline in `Exchange` and reset with it.
struct UpstreamLeg {
    /// Which upstream (`Worker.upstreams`): 0, the top-level one, unless a rule chose another.
    var index = 0
    private(set) var connection: UpstreamConnection?
    /// The metrics slot of the server `connection` belongs to (`ServerLabels`), copied when it
    /// is attached: the response head records under it without loading the pool again.
    private(set) var metricsSlot = 0
    /// When the connection was attached (the upstream's latency, the access line's upstream time).
    private(set) var startedMs: Int64 = 0
    /// A copy of a small request body that arrived whole, so the request can be replayed
    /// when a reused upstream connection resets before reading it.
    private(set) var replayBody: [UInt8]?
    /// Queued for an upstream connection (`UpstreamBudget.waiters`), and whether for a fresh one.
    private(set) var wait = Wait.none

    enum Wait { case none, waiting, waitingFresh }

    /// The exchange holds `connection` from now on, counted against the HTTP/2 connection's
    /// `allowance` if it has one (the pool gives it back on release or discard); `started`
    /// follows at once. Inlined into the connection's `attach`, as it was written there.
    @inline(__always)
    mutating func attach(_ connection: UpstreamConnection, owner: ClientConnection, allowance: UpstreamAllowance?) {
        connection.owner = owner
        if let allowance {
            allowance.held += 1
            connection.allowance = allowance
        }
        self.connection = connection
        metricsSlot = connection.pool.metricsSlot
    }

    /// When the attached connection began to serve the exchange. Apart from `attach`, so the
    /// clock is read after its stores: a value read before them is held across them, a
    /// register saved and restored on every request.
    mutating func started(atMs nowMs: Int64) { startedMs = nowMs }

    /// Lets go of the connection; the caller gives it back to its pool.
    mutating func detach() -> UpstreamConnection? {
        guard let connection else { return nil }
        self.connection = nil
        return connection
    }

    /// Keeps the body for a replay when all `count` of its bytes are already in `input`.
    mutating func keepForReplay(_ count: Int, from input: ByteQueue) {
        var copy = [UInt8](repeating: 0, count: count)
        _ = copy.withUnsafeMutableBytes { input.copyPrefix(into: $0) }
        replayBody = copy
    }

    mutating func enterQueue(fresh: Bool, allowance: UpstreamAllowance?) {
        wait = fresh ? .waitingFresh : .waiting
        allowance?.waiting += 1
    }

    /// Off the queue (taken off by the worker's pass, or given up), if it was on it.
    mutating func leaveQueue(allowance: UpstreamAllowance?) {
        guard wait != .none else { return }
        wait = .none
        allowance?.waiting -= 1
    }

    /// Back to its start for the next exchange (`Exchange.reset`): the connection was given
    /// back and the queue left as the exchange ended.
    mutating func reset() {
        index = 0
        if connection != nil { connection = nil }
        metricsSlot = 0
        startedMs = 0
        if replayBody != nil { replayBody = nil }
        wait = .none
    }
}
