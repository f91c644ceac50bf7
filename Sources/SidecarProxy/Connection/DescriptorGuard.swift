import Glibc
import Logging
import SidecarEvent
import Synchronization

/// What a worker does when accept fails for lack of file descriptors: say so once
/// per episode (not per failed accept), count it, free slots as nginx does — idle upstream and
/// keep-alive connections first, then the oldest unfinished request heads; with none, the
/// oldest streams of the HTTP/2 connection holding the most upstream connections — and let
/// the listener's back-off resume accepting by itself. Never a silent stall.
enum DescriptorGuard {
    /// When any worker last met the limit (monotonic ms): an episode is a run of failures
    /// less than `episodeGapMs` apart, for the whole process (workers hit the limit together).
    private static let lastExhaustedMs = Atomic<Int64>(.min / 2)
    static let episodeGapMs: Int64 = 10_000

    static func exhausted(_ context: ConnectionContext, errno code: Int32, clients: [any FrontConnection]) {
        context.metrics.recordDescriptorExhaustion()
        let freed = freeSlots(in: clients, upstreams: context.upstreams.servers)
        let now = context.nowMs
        let previous = lastExhaustedMs.exchange(now, ordering: .acquiringAndReleasing)
        if now - previous > episodeGapMs {
            let limits = DescriptorLimit.current()
            Logger(label: "sidecar").error(
                "accept4() failed (\(code): \(String(cString: strerror(code)))): at the file-descriptor limit; closing idle connections and retrying",
                metadata: [
                    "limit_soft": .stringConvertible(limits.soft), "limit_hard": .stringConvertible(limits.hard),
                    "open_connections": .stringConvertible(clients.count), "freed": .stringConvertible(freed),
                ])
        }
    }

    /// Closes up to a sixteenth of the connections (at least 8): idle upstream connections,
    /// then idle client connections oldest first, then connections still sending their head,
    /// oldest first. Exchanges in progress are kept, unless nothing else could be freed: then
    /// the busiest HTTP/2 connection sheds its oldest streams (a client holding many upstream
    /// connections through one descriptor of its own must not lock everyone else out).
    static func freeSlots(in clients: [any FrontConnection], upstreams: [UpstreamPool]) -> Int {
        let quota = max(8, clients.count / 16)
        var freed = 0
        for pool in upstreams where freed < quota { freed += pool.closeIdle(quota - freed) }
        let idle = clients.filter(\.isIdle).sorted { $0.openedMs < $1.openedMs }
        let heads = clients.filter(\.isReadingHead).sorted { $0.openedMs < $1.openedMs }
        for client in (idle + heads).prefix(quota - freed) {
            client.close()
            freed += 1
        }
        if freed == 0, let busiest = clients.max(by: { $0.upstreamsHeld < $1.upstreamsHeld }), busiest.upstreamsHeld > 1 {
            freed = busiest.shed(quota)
        }
        return freed
    }
}
