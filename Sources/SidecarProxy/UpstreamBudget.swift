import SidecarEvent

/// What one client connection holds of upstream connections at once: an HTTP/2 connection's
/// streams together. Without it, each of `max_streams` streams could hold a connection of its
/// own, and a few clients every descriptor the process has. (An HTTP/1.1 connection holds one
/// at most and has none.)
final class UpstreamAllowance {
    let limit: Int
    var held = 0
    /// Its streams queued for an upstream connection: a stream that arrives meanwhile queues
    /// behind them instead of taking the next connection freed before the queue's pass runs
    /// (a client that starts a stream as each one ends would otherwise keep the queued ones
    /// waiting until their deadline).
    var waiting = 0

    init(limit: Int) { self.limit = max(1, limit) }
}

/// Whether an exchange may have an upstream connection now, and how. Pure, so the caps are
/// table-tested without sockets.
enum UpstreamAdmission: Equatable {
    /// An idle connection of its pool.
    case reuse
    case open
    /// A cap is reached, but partly by idle connections: the oldest idle one (of this pool if
    /// it has one) is closed, and a new connection opened in its place.
    case openAfterClosingIdle
    /// Queued until a connection frees, for at most `upstream_connect_timeout`.
    case wait

    struct Counts: Equatable {
        /// This client connection's upstream connections, and its cap (0: none, HTTP/1.1).
        var held = 0
        var clientLimit = 0
        var idleInPool = 0
        /// Open connections to this upstream (busy, connecting or idle), and its cap (0: none).
        var openInPool = 0
        var poolLimit = 0
        /// Open upstream connections of the worker, all upstreams together, and its budget.
        var openInWorker = 0
        var workerLimit = 1
        var idleInWorker = 0
        /// A retry after a failure: it must not take an idle connection.
        var fresh = false
    }

    @inline(__always)
    static func decide(_ counts: Counts) -> UpstreamAdmission {
        if counts.clientLimit > 0, counts.held >= counts.clientLimit { return .wait }
        if !counts.fresh, counts.idleInPool > 0 { return .reuse }
        if counts.poolLimit > 0, counts.openInPool >= counts.poolLimit {
            return counts.idleInPool > 0 ? .openAfterClosingIdle : .wait
        }
        if counts.openInWorker >= counts.workerLimit {
            return counts.idleInWorker > 0 ? .openAfterClosingIdle : .wait
        }
        return .open
    }
}

/// Exchanges waiting for an upstream connection, first come first served. One that still
/// cannot have one (its client connection is at its cap) keeps its place without holding up
/// those behind it.
final class UpstreamWaitList<Waiter: AnyObject> {
    private var waiters: [Waiter] = []

    var isEmpty: Bool { waiters.isEmpty }
    var count: Int { waiters.count }

    func append(_ waiter: Waiter) { waiters.append(waiter) }

    func remove(_ waiter: Waiter) {
        if let index = waiters.firstIndex(where: { $0 === waiter }) { waiters.remove(at: index) }
    }

    /// Oldest first: each waiter `mayProceed` says yes to leaves the list, then `proceed` runs
    /// for it. `proceed` may add waiters (they are looked at in this pass too) or remove some.
    func admit(mayProceed: (Waiter) -> Bool, proceed: (Waiter) -> Void) {
        var index = 0
        while index < waiters.count {
            let waiter = waiters[index]
            guard mayProceed(waiter) else {
                index += 1
                continue
            }
            waiters.remove(at: index)
            proceed(waiter)
        }
    }
}

/// A worker's upstream connections against its share of the descriptor budget: at most as
/// many open at once as it may hold client connections, so that `max_connections` connections
/// need two descriptors each whatever HTTP/2 multiplexes (`DescriptorLimit`).
final class UpstreamBudget {
    let limit: Int
    private(set) var open = 0
    let waiters = UpstreamWaitList<ClientConnection>()
    private let loop: EventLoop
    private var passScheduled = false
    /// Admits the waiters that may proceed (the worker's, which knows the pools).
    var pass: () -> Void = {}

    init(loop: EventLoop, limit: Int) {
        self.loop = loop
        self.limit = max(1, limit)
    }

    func opened() { open += 1 }

    func closed() {
        open -= 1
        freed()
    }

    /// A connection closed, went idle or left its client connection: the waiters are looked
    /// at on the loop's next turn (never inside the exchange that let it go).
    @inline(__always)
    func freed() {
        guard !waiters.isEmpty, !passScheduled else { return }
        passScheduled = true
        loop.nextTurn.run { [weak self] in
            guard let self else { return }
            passScheduled = false
            pass()
        }
    }
}
