import CEvent
import COpenSSL
import Glibc

/// A small HTTP/1.1 server for services that are not the proxy (the Apple emulator, the demo
/// upstream): strict request heads, bounded buffered bodies, keep-alive, header and idle
/// deadlines, optional TLS. Everything runs on one loop; the handler is called on it and
/// must call `respond` exactly once, on the same loop, now or later (or never: the
/// connection then waits until the client gives up or the server closes).
public final class ServiceServer {
    public typealias Handler = (ServiceRequest, @escaping (ServiceResponse) -> Void) -> Void

    public struct Options: Sendable {
        public var maxHeadBytes = 16 * 1024
        public var maxBodyBytes = 1024 * 1024
        /// Total deadline from the first byte of a head to its end (not reset per line).
        public var headerTimeoutMs: Int64 = 10_000
        /// Deadline for a body once its head is complete.
        public var bodyTimeoutMs: Int64 = 30_000
        /// A connection without a request in progress is closed after this.
        public var idleTimeoutMs: Int64 = 60_000
        public var maxConnections = 1024
        /// false: one request per connection, every answer with `Connection: close` (the
        /// admin listener: probes and scrapers open a connection per request).
        public var keepAlive = true

        public init() {}
    }

    public let options: Options
    let handler: Handler
    private let loop: EventLoop
    private let tls: ServiceTLSContext?
    private var listener: Listener?
    private var connections: [ObjectIdentifier: ServiceConnection] = [:]
    private let reaper: Reaper
    public let localAddress: SocketAddress?
    public private(set) var isClosing = false

    /// Serves on an already listening non-blocking socket (the server owns it from now on).
    public init(loop: EventLoop, listeningFD fd: Int32, tls: ServiceTLSContext? = nil,
                options: Options = Options(), handler: @escaping Handler) {
        self.loop = loop
        self.tls = tls
        self.options = options
        self.handler = handler
        reaper = Reaper(loop: loop)
        localAddress = Socket.localAddress(of: fd)
        listener = Listener(loop: loop, fd: fd) { [unowned self] client, peer in self.accept(client, peer) }
    }

    /// Binds `address` (port 0 picks a free one: read `localAddress`) and serves on it.
    public convenience init(loop: EventLoop, address: SocketAddress, tls: ServiceTLSContext? = nil,
                            options: Options = Options(), handler: @escaping Handler) throws(ServiceError) {
        let fd: Int32
        do { fd = try Socket.listen(on: address, reusePort: false) } catch { throw .listen(error) }
        self.init(loop: loop, listeningFD: fd, tls: tls, options: options, handler: handler)
    }

    public var isSecure: Bool { tls != nil }

    /// Stops accepting; idle connections close now, busy ones after their answer.
    public func close() {
        guard !isClosing else { return }
        isClosing = true
        listener?.close()
        for connection in Array(connections.values) { connection.closeIfIdle() }
    }

    private func accept(_ fd: Int32, _ peer: SocketAddress) {
        guard !isClosing, connections.count < options.maxConnections else {
            Socket.close(fd)
            return
        }
        if peer.family != .unix { Socket.setNoDelay(fd) }
        let flags = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        let bev: OpaquePointer?
        if let tls {
            guard let ssl = tls.makeSSL() else {
                Socket.close(fd)
                return
            }
            bev = bufferevent_openssl_socket_new(loop.base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, flags)
            if let bev { bufferevent_openssl_set_allow_dirty_shutdown(bev, 1) } else { SSL_free(ssl) }
        } else {
            bev = bufferevent_socket_new(loop.base, fd, flags)
        }
        guard let bev else {
            Socket.close(fd)
            return
        }
        let connection = ServiceConnection(server: self, loop: loop, bev: bev, peer: peer, isSecure: tls != nil)
        connections[ObjectIdentifier(connection)] = connection
    }

    func connectionClosed(_ connection: ServiceConnection) {
        if let removed = connections.removeValue(forKey: ObjectIdentifier(connection)) {
            reaper.retire(removed)
        }
    }
}
