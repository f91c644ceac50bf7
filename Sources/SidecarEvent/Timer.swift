import CEvent
import Glibc

/// A one-shot timer on a loop. `schedule` re-arms it (libevent keeps timers in a heap); the
/// handler is called on the loop thread, never before the duration has passed by a fresh
/// monotonic clock read when `schedule` was called.
public final class Timer {
    private var event: OpaquePointer?
    private let base: OpaquePointer
    private var handler: () -> Void
    /// The loop whose base holds the event, kept so the event is freed before the base (nil:
    /// made from a bare base, whose owner keeps it).
    private let loop: EventLoop?

    public convenience init(loop: EventLoop, handler: @escaping () -> Void) {
        self.init(base: loop.base, loop: loop, handler: handler)
    }

    /// A timer whose handler its owner sets later (`onFire`), once it can capture itself:
    /// so that the owner can keep the timer in a `let`, which calls through it borrow, where a
    /// `var` is retained and released around each call.
    public convenience init(loop: EventLoop) {
        self.init(base: loop.base, loop: loop, handler: {})
    }

    /// What firing calls from now on.
    public func onFire(_ handler: @escaping () -> Void) { self.handler = handler }

    /// On the loop whose `event_base` is `base` (for owners that hold only that).
    public convenience init(base: OpaquePointer, handler: @escaping () -> Void) {
        self.init(base: base, loop: nil, handler: handler)
    }

    private init(base: OpaquePointer, loop: EventLoop?, handler: @escaping () -> Void) {
        self.handler = handler
        self.base = base
        self.loop = loop
        event = event_new(base, -1, 0, { _, _, context in
            guard let context else { return }
            let timer = Unmanaged<Timer>.fromOpaque(context).takeUnretainedValue()
            timer.handler()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { if let event { event_free(event) } }

    /// `clockJustRead`: the caller has just refreshed the loop's time
    /// (`EventLoop.refreshedNowMilliseconds`), so it is not read a second time.
    public func schedule(afterMilliseconds ms: Int64, clockJustRead: Bool = false) {
        guard let event else { return }
        var tv = timeval(milliseconds: max(0, ms))
        // libevent adds the duration to its time cached at the iteration's wake-up: after a
        // long callback that is already in the past, and the timer would fire that much early.
        if !clockJustRead { _ = event_base_update_cache_time(base) }
        _ = event_add(event, &tv)
    }

    public func cancel() {
        guard let event else { return }
        _ = event_del(event)
    }

    /// False when libevent could not make the timer (memory was short): it never fires.
    public var isUsable: Bool { event != nil }

    public var isScheduled: Bool {
        guard let event else { return false }
        return event_pending(event, Int16(EV_TIMEOUT), nil) != 0
    }
}
