import SidecarEvent
import Synchronization

/// Where a certificate obtained at run time (ACME, on its own thread) is handed to the running
/// proxy: the control loop takes it in as SIGHUP takes a new pair, for new connections.
public final class CertificateHandover: Sendable {
    private struct State {
        var pending: TLSServerContext?
        var tookOne = false
    }

    private let state = Mutex(State())
    let channel: WakeupChannel

    init() throws(EventError) { channel = try WakeupChannel() }

    /// Callable from any thread; the latest of several handed over before the loop looks wins.
    public func serve(_ tls: TLSServerContext) {
        state.withLock { $0.pending = tls }
        channel.notify()
    }

    func take() -> TLSServerContext? {
        state.withLock { state in
            guard let tls = state.pending.take() else { return nil }
            state.tookOne = true
            return tls
        }
    }

    /// Whether the proxy has taken a handed-over certificate into service yet (a first one,
    /// after a start on a placeholder: until then it refuses every other handshake).
    public var hasTakenOne: Bool { state.withLock { $0.tookOne } }
}
