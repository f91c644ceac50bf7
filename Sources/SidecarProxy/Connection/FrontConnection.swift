/// A client connection as its worker sees it: HTTP/1.1 (`ClientConnection`) or HTTP/2
/// (`HTTP2Connection`). The worker counts, drains and, at the descriptor limit, frees them
/// through this seam and nothing else.
protocol FrontConnection: AnyObject {
    /// When the connection was accepted (to free the oldest first at the descriptor limit).
    var openedMs: Int64 { get }
    /// Nothing in progress and nothing received: the first to close at the descriptor limit.
    var isIdle: Bool { get }
    /// Part of a request head received, the rest still awaited (a slowloris candidate).
    var isReadingHead: Bool { get }
    /// Upstream connections its exchanges hold now (the busiest sheds at the descriptor limit).
    var upstreamsHeld: Int { get }
    /// At the descriptor limit with nothing idle to close: ends up to `count` of its oldest
    /// exchanges that hold an upstream connection, and takes no new ones. Returns how many.
    func shed(_ count: Int) -> Int
    /// Graceful shutdown begins (SIGTERM): finish what is in progress, take nothing new.
    func drain()
    /// The drain's grace period is over: close if nothing is in progress.
    func closeIfIdle()
    func close()
}

extension ClientConnection: FrontConnection {
    var upstreamsHeld: Int { exchange.upstream == nil ? 0 : 1 }
    /// An HTTP/1.1 exchange is the client's one request: it is kept.
    func shed(_ count: Int) -> Int { 0 }
}
