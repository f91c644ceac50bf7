import Synchronization

/// One worker's finished spans on their way to the exporter thread: a ring of fixed
/// capacity behind a lock that only this worker and the exporter take (uncontended but
/// for the exporter's drain, a few times a second). Full, it drops the span and counts it:
/// a collector that falls behind costs spans, never memory or request time.
final class SpanQueue: Sendable {
    private let ring: Mutex<SpanRing>

    init(capacity: Int) { ring = Mutex(SpanRing(capacity: capacity)) }

    func push(_ span: SpanRecord) {
        ring.withLock { $0.push(span) }
    }

    /// Two spans of one exchange under one lock.
    func push(_ first: SpanRecord, _ second: SpanRecord) {
        ring.withLock {
            $0.push(first)
            $0.push(second)
        }
    }

    var count: Int { ring.withLock { $0.count } }

    /// Moves up to `limit` of the oldest spans to `out`; returns the spans dropped for want of
    /// room since the last call.
    func drain(into out: inout [SpanRecord], limit: Int) -> UInt64 {
        ring.withLock { $0.drain(into: &out, limit: limit) }
    }
}

/// The ring itself: slots allocated with the first span (a worker of a process that exports
/// nothing holds none), then overwritten in place.
struct SpanRing {
    private var slots: [SpanRecord] = []
    private var head = 0
    private(set) var count = 0
    private var dropped: UInt64 = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func push(_ span: SpanRecord) {
        guard count < capacity else {
            dropped &+= 1
            return
        }
        if slots.isEmpty { slots = Array(repeating: SpanRecord(), count: capacity) }
        var index = head + count
        if index >= slots.count { index -= slots.count }
        slots[index] = span
        count += 1
    }

    mutating func drain(into out: inout [SpanRecord], limit: Int) -> UInt64 {
        let taken = min(count, max(0, limit))
        for _ in 0..<taken {
            out.append(slots[head])
            head += 1
            if head == slots.count { head = 0 }
        }
        count -= taken
        let lost = dropped
        dropped = 0
        return lost
    }
}
