import CEvent

/// Work run on a later turn of the loop, never inside the call that queued it: a callback
/// promised "later" then cannot reach a caller that has not yet returned. Costs no system
/// call (`event_active`). Loop thread only; one per loop (`EventLoop.nextTurn`).
public final class NextTurn {
    private enum Work {
        case closure(() -> Void)
        case task(any NextTurnTask)
    }

    private var queued: [Work] = []
    /// The batch being run, kept between turns with its capacity (swapped with `queued`):
    /// a turn allocates no array.
    private var running: [Work] = []
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
        enqueue(.closure(work))
    }

    /// Queues `task` (held strongly until its turn): for an object that queues the same work
    /// again and again, with no closure made per call nor one kept with a `weak` capture (a
    /// weak reference moves every retain and release of its object to the slow path).
    public func run(_ task: any NextTurnTask) {
        enqueue(.task(task))
    }

    private func enqueue(_ work: Work) {
        queued.append(work)
        if queued.count == 1, let event { event_active(event, EV_TIMEOUT, 0) }
    }

    private func runQueued() {
        swap(&queued, &running)
        for work in running {
            switch work {
            case .closure(let closure): closure()
            case .task(let task): task.runOnNextTurn()
            }
        }
        running.removeAll(keepingCapacity: true)
    }
}

/// Work an object queues on `NextTurn` as itself.
public protocol NextTurnTask: AnyObject {
    func runOnNextTurn()
}
