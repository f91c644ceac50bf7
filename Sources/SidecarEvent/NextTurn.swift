import CEvent

/// Work run on a later turn of the loop, never inside the call that queued it: a callback
/// promised "later" then cannot reach a caller that has not yet returned. Costs no system
/// call (`event_active`). Loop thread only; one per loop (`EventLoop.nextTurn`).
public final class NextTurn {
    private var queued: [() -> Void] = []
    /// The batch being run, kept between turns with its capacity (swapped with `queued`):
    /// a turn allocates no array.
    private var running: [() -> Void] = []
    private var event: OpaquePointer?

    init(loop: EventLoop) {
        event = event_new(loop.base, -1, 0, { _, _, context in
            guard let context else { return }
            Unmanaged<NextTurn>.fromOpaque(context).takeUnretainedValue().runQueued()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { detach() }

    /// The loop is going away: queued work is dropped with it.
    func detach() {
        if let event { event_free(event) }
        event = nil
        queued = []
        running = []
    }

    public func run(_ work: @escaping () -> Void) {
        queued.append(work)
        if queued.count == 1, let event { event_active(event, EV_TIMEOUT, 0) }
    }

    private func runQueued() {
        swap(&queued, &running)
        for work in running { work() }
        running.removeAll(keepingCapacity: true)
    }
}
