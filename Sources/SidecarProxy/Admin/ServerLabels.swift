import Synchronization

/// The `server` label of the upstream metrics: each server a worker opens a pool for (a
/// configured one, or an address its name resolved to) gets a slot of `WorkerMetrics` once, when
/// its pool is made (never per request), shared by every worker so that their counts add up.
/// Slots last as long as the process (a counter's series must not reset), so the set is bounded:
/// `named` servers in all, first come first served; a server past them is counted as
/// `server="other"` under its upstream, and past `otherSlots` upstreams with such servers, as
/// `upstream="other",server="other"`.
final class ServerLabels: Sendable {
    /// Servers with a label of their own, all upstreams together.
    static let named = 64
    /// The `other` buckets of as many upstreams as can be configured at once.
    static let otherSlots = WorkerMetrics.maxUpstreams
    /// Every slot: the named ones, the upstreams' `other`, and the last one for the rest.
    static let slots = named + otherSlots + 1
    static let other = "other"

    private struct Labels {
        var pairs: [(upstream: String, server: String)] = []
        var otherCount = 0
    }

    private let labels = Mutex(Labels())

    /// The slot of `server` of `upstream`, assigned on first sight.
    func slot(upstream: String, server: String) -> Int {
        labels.withLock { labels in
            if let found = labels.pairs.firstIndex(where: { $0.upstream == upstream && $0.server == server }) {
                return found
            }
            if labels.pairs.count - labels.otherCount < Self.named {
                labels.pairs.append((upstream, server))
                return labels.pairs.count - 1
            }
            if let found = labels.pairs.firstIndex(where: { $0.upstream == upstream && $0.server == Self.other }) {
                return found
            }
            guard labels.otherCount < Self.otherSlots else { return Self.slots - 1 }
            labels.pairs.append((upstream, Self.other))
            labels.otherCount += 1
            return labels.pairs.count - 1
        }
    }

    /// The label pair of each slot in use, by slot.
    var assigned: [(slot: Int, upstream: String, server: String)] {
        let pairs = labels.withLock { $0.pairs }
        var all = pairs.enumerated().map { (slot: $0, upstream: $1.upstream, server: $1.server) }
        all.append((Self.slots - 1, Self.other, Self.other))
        return all
    }
}
