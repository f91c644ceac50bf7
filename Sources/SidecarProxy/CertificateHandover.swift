import SidecarEvent
import Synchronization

/// Where a certificate obtained at run time (ACME, on its own thread) is handed to the running
/// proxy: the control loop takes it in as SIGHUP takes a new pair, for new connections.
public final class CertificateHandover: Sendable {
    private let pending = Mutex<TLSServerContext?>(nil)
    let channel: WakeupChannel

    init() throws(EventError) { channel = try WakeupChannel() }

    /// Callable from any thread; the latest of several handed over before the loop looks wins.
    public func serve(_ tls: TLSServerContext) {
        pending.withLock { $0 = tls }
        channel.notify()
    }

    func take() -> TLSServerContext? { pending.withLock { $0.take() } }

    /// A certificate handed over that the proxy has not taken into service yet.
    public var isPending: Bool { pending.withLock { $0 != nil } }
}
