import CEvent
import Glibc

/// Keeps objects alive until the loop has returned from the current callback. A connection
/// that closes inside its own event callback hands itself here instead of being freed while
/// its methods are still on the stack. Costs no syscall (`event_active`).
public final class Reaper {
    private var objects: [AnyObject] = []
    /// The batch being released, kept between turns with its capacity (swapped with `objects`):
    /// retiring allocates no array.
    private var releasing: [AnyObject] = []
    private var event: OpaquePointer?
    /// Its event belongs to the loop's base: freeing it after the base would touch freed memory.
    private let loop: EventLoop

    public init(loop: EventLoop) {
        self.loop = loop
        event = event_new(loop.base, -1, 0, { _, _, context in
            guard let context else { return }
            Unmanaged<Reaper>.fromOpaque(context).takeUnretainedValue().reap()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { if let event { event_free(event) } }

    public func retire(_ object: AnyObject) {
        objects.append(object)
        if objects.count == 1, let event { event_active(event, EV_TIMEOUT, 0) }
    }

    private func reap() {
        swap(&objects, &releasing)
        // Released here, outside any connection callback; a deinit that retires another
        // object appends to `objects`, for the next turn.
        releasing.removeAll(keepingCapacity: true)
    }
}
