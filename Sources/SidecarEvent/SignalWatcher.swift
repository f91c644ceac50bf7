import CEvent
import Glibc

/// Delivers a POSIX signal to a handler on a loop (libevent's self-pipe; safe to do real work).
public final class SignalWatcher {
    private var event: OpaquePointer?
    private let handler: (Int32) -> Void

    public init(loop: EventLoop, signal: Int32, handler: @escaping (Int32) -> Void) {
        self.handler = handler
        event = sidecar_evsignal_new(loop.base, signal, { signal, _, context in
            guard let context else { return }
            Unmanaged<SignalWatcher>.fromOpaque(context).takeUnretainedValue().handler(signal)
        }, Unmanaged.passUnretained(self).toOpaque())
        _ = event_add(event, nil)
    }

    deinit { if let event { event_free(event) } }

    public func cancel() { _ = event_del(event) }

    /// Broken pipes must surface as EPIPE on write, not kill the process.
    public static func ignoreSIGPIPE() { _ = CEvent.signal(SIGPIPE, SIG_IGN) }
}
