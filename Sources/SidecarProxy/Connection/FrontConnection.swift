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
    /// Graceful shutdown begins (SIGTERM): finish what is in progress, take nothing new.
    func drain()
    /// The drain's grace period is over: close if nothing is in progress.
    func closeIfIdle()
    func close()
}

extension ClientConnection: FrontConnection {}
