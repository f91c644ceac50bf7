import SidecarEvent
import Synchronization

/// The current options and resolved upstream address, replaced as a whole on reload (on
/// the control thread) and read by each worker when it is told to apply them.
final class SharedSettings: Sendable {
    private let state: Mutex<(ProxyOptions, SocketAddress)>

    init(_ options: ProxyOptions, upstream: SocketAddress) {
        state = Mutex((options, upstream))
    }

    var current: (ProxyOptions, SocketAddress) { state.withLock { $0 } }

    func replace(_ options: ProxyOptions, upstream: SocketAddress) {
        state.withLock { $0 = (options, upstream) }
    }
}
