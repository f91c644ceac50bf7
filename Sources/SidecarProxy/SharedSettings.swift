import SidecarEvent
import Synchronization

/// The current options and resolved upstream addresses (the top-level upstream first, then
/// `upstreams` in order), replaced as a whole on reload (on the control thread) and read by
/// each worker when it is told to apply them.
final class SharedSettings: Sendable {
    private let state: Mutex<(ProxyOptions, [[SocketAddress]])>

    init(_ options: ProxyOptions, upstreams: [[SocketAddress]]) {
        state = Mutex((options, upstreams))
    }

    var current: (ProxyOptions, [[SocketAddress]]) { state.withLock { $0 } }

    func replace(_ options: ProxyOptions, upstreams: [[SocketAddress]]) {
        state.withLock { $0 = (options, upstreams) }
    }
}
