import CEvent
import Glibc

/// A thread-safe doorbell for a loop (an eventfd): any thread may `notify()`; the loop that
/// `watch`es it runs the handler.
public final class WakeupChannel: Sendable {
    let fd: Int32

    public init() throws(EventError) {
        fd = sidecar_eventfd()
        guard fd >= 0 else { throw .system("eventfd", errno: errno) }
    }

    deinit { Socket.close(fd) }

    public func notify() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }
}

/// The loop side of a `WakeupChannel`. Notifications that arrive before the loop reads the
/// eventfd coalesce into one wake-up; `counting` handlers get how many there were.
public final class Wakeup {
    private let channel: WakeupChannel
    private var event: OpaquePointer?
    private let handler: (UInt64) -> Void
    /// Its event belongs to the loop's base: freeing it after the base would touch freed memory.
    private let loop: EventLoop

    public convenience init(loop: EventLoop, channel: WakeupChannel, handler: @escaping () -> Void) {
        self.init(loop: loop, channel: channel, counting: { _ in handler() })
    }

    public init(loop: EventLoop, channel: WakeupChannel, counting handler: @escaping (UInt64) -> Void) {
        self.channel = channel
        self.handler = handler
        self.loop = loop
        event = event_new(loop.base, channel.fd, Int16(EV_READ | EV_PERSIST), { fd, _, context in
            guard let context else { return }
            var count: UInt64 = 0
            guard read(fd, &count, 8) == 8, count > 0 else { return }
            Unmanaged<Wakeup>.fromOpaque(context).takeUnretainedValue().handler(count)
        }, Unmanaged.passUnretained(self).toOpaque())
        _ = event_add(event, nil)
    }

    deinit { if let event { event_free(event) } }
}
