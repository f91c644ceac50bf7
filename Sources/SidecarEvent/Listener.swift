import CEvent
import Glibc

/// Accepts connections from a listening socket with one persistent read event.
public final class Listener {
    public let fd: Int32
    private var event: OpaquePointer?
    private let onAccept: (Int32, SocketAddress) -> Void
    /// Its event belongs to the loop's base: freeing it after the base would touch freed memory.
    private let loop: EventLoop
    public private(set) var isPaused = false
    private var backoff: Timer?
    /// Called when accept fails for lack of descriptors (EMFILE/ENFILE), before the short
    /// back-off: the owner logs the episode and frees slots.
    public var onDescriptorsExhausted: ((Int32) -> Void)?

    /// `onAccept` receives each new non-blocking fd and its peer address.
    public init(loop: EventLoop, fd: Int32, onAccept: @escaping (Int32, SocketAddress) -> Void) {
        self.fd = fd
        self.onAccept = onAccept
        self.loop = loop
        event = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, context in
            guard let context else { return }
            Unmanaged<Listener>.fromOpaque(context).takeUnretainedValue().acceptReady()
        }, Unmanaged.passUnretained(self).toOpaque())
        _ = event_add(event, nil)
        backoff = Timer(loop: loop) { [unowned self] in self.resume() }
    }

    deinit {
        if let event { event_free(event) }
        Socket.close(fd)
    }

    public func pause() {
        guard !isPaused else { return }
        isPaused = true
        _ = event_del(event)
    }

    public func resume() {
        guard isPaused else { return }
        isPaused = false
        _ = event_add(event, nil)
    }

    /// Stops accepting for good and closes the socket (graceful shutdown). Connections the
    /// kernel already completed are accepted and handed over first: closing a listener
    /// resets everything still in its queue, and those clients may have sent a request.
    public func close() {
        pause()
        acceptQueued: while true {
            switch Socket.accept(fd) {
            case .accepted(let client, let peer): onAccept(client, peer)
            case .failed(let code) where code == ECONNABORTED || code == EINTR || code == EPROTO: continue
            case .wouldBlock, .failed: break acceptQueued
            }
        }
        _ = shutdown(fd, Int32(SHUT_RDWR))
    }

    private func acceptReady() {
        // A bounded batch keeps one busy listener from starving established connections.
        for _ in 0..<64 where !isPaused {
            switch Socket.accept(fd) {
            case .accepted(let client, let peer): onAccept(client, peer)
            case .wouldBlock: return
            case .failed(let code):
                // EMFILE/ENFILE: back off briefly instead of spinning on a level-triggered fd.
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    if code == EMFILE || code == ENFILE { onDescriptorsExhausted?(code) }
                    pause()
                    backoff?.schedule(afterMilliseconds: 100)
                    return
                }
                if code == ECONNABORTED || code == EINTR || code == EPROTO { continue }
                return
            }
        }
    }
}
