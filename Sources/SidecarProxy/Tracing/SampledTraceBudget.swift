/// How many continued traces whose parent says "sampled" a worker honours per second
/// (`tracing.max_incoming_sampled_per_second`, shared out among the workers): a token
/// bucket refilled by the loop's clock, holding at most a second's worth. A client may set
/// the flag on every request; past the budget its traces go on unsampled — no span exported,
/// flag 00 upstream — so it cannot flood the collector (nor the upstream's, through the
/// flag). One per worker, read and written on its loop only: no atomics per request.
struct SampledTraceBudget {
    private var perMs: Double
    private var capacity: Double
    private var tokens: Double
    private var lastMs: Int64

    /// `perSecond`: this worker's share (the setting divided by the workers). `nowMs` nil:
    /// the bucket fills at its first use, whenever that is.
    init(perSecond: Double, nowMs: Int64?) {
        perMs = max(0, perSecond) / 1000
        capacity = perSecond > 0 ? max(1, perSecond) : 0
        tokens = capacity
        lastMs = nowMs ?? .min
    }

    /// The same budget at a new rate (a reload), keeping what is left of the current one.
    mutating func resize(perSecond: Double) {
        perMs = max(0, perSecond) / 1000
        capacity = perSecond > 0 ? max(1, perSecond) : 0
        tokens = min(tokens, capacity)
    }

    /// Takes one sampled trace from the budget; false when none is left.
    mutating func admit(nowMs: Int64) -> Bool {
        if lastMs == .min {
            tokens = capacity
            lastMs = nowMs
        } else if nowMs > lastMs {
            tokens = min(capacity, tokens + Double(nowMs - lastMs) * perMs)
            lastMs = nowMs
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
