import CEvent
import Glibc

/// Lets any thread poke a loop: `notify()` is thread-safe; the handler runs on the loop.
public final class Wakeup: @unchecked Sendable {
    private let fd: Int32
    private var event: OpaquePointer?
    private let handler: () -> Void

    public init(loop: EventLoop, handler: @escaping () -> Void) throws(EventError) {
        fd = sidecar_eventfd()
        guard fd >= 0 else { throw .system("eventfd", errno: errno) }
        self.handler = handler
        event = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { fd, _, context in
            guard let context else { return }
            var value: UInt64 = 0
            _ = read(fd, &value, 8)
            Unmanaged<Wakeup>.fromOpaque(context).takeUnretainedValue().handler()
        }, Unmanaged.passUnretained(self).toOpaque())
        _ = event_add(event, nil)
    }

    deinit {
        if let event { event_free(event) }
        Socket.close(fd)
    }

    /// Safe from any thread (a write to an eventfd).
    public func notify() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }
}
