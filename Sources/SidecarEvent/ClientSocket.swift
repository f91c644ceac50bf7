import CEvent
import COpenSSL
import Glibc

/// An outgoing connection with buffered input and output — libevent's bufferevent, over
/// plain TCP or client TLS from a `TLSClientContext` — for the few connections the sidecar
/// makes to other services (Apple, Redis). Not the proxy's path (`Stream` is): callbacks are
/// deferred to the loop's next turn and every write copies.
///
/// The handlers run on the loop's thread, never from inside a call made on the socket; an
/// owner may drop the socket from inside one (no handler runs after that).
public final class ClientSocket {
    public enum Event: Equatable, Sendable {
        case connected
        /// The peer closed the connection.
        case endOfStream
        /// A connect, read, write or TLS handshake failed; `errno` as it was then.
        case failed(errno: Int32)
    }

    public enum SetupError: Error, Equatable, Sendable {
        /// No TLS session could be made for the host.
        case tls
        /// No socket could be made.
        case socket
    }

    private let bev: OpaquePointer
    /// What arrived and was not consumed yet.
    public let input: ByteQueue
    public var onReadable: (() -> Void)?
    public var onEvent: ((Event) -> Void)?

    /// A socket that is not connected yet (`connect(to:)`); with `tls`, the handshake for
    /// `host` (verified against it) follows the connect.
    public init(base: OpaquePointer, tls: TLSClientContext?, host: String, isIPLiteral: Bool) throws(SetupError) {
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        var created: OpaquePointer?
        if let tls {
            guard let ssl = tls.makeSSL(host: host, isIPLiteral: isIPLiteral) else { throw .tls }
            created = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options)
            if created == nil { SSL_free(ssl) }
        } else {
            created = bufferevent_socket_new(base, -1, options)
        }
        guard let created, let input = bufferevent_get_input(created) else { throw .socket }
        bev = created
        self.input = ByteQueue(input)
        bufferevent_setcb(bev, { _, context in
            guard let context else { return }
            Unmanaged<ClientSocket>.fromOpaque(context).takeUnretainedValue().onReadable?()
        }, nil, { _, events, context in
            guard let context else { return }
            let code = errno
            Unmanaged<ClientSocket>.fromOpaque(context).takeUnretainedValue().report(events, errno: code)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Also clears the callbacks, so none runs after this.
    deinit { bufferevent_free(bev) }

    /// Starts a non-blocking connect; false when it failed at once.
    public func connect(to address: SocketAddress) -> Bool {
        address.withSockaddr { bufferevent_socket_connect(bev, $0, Int32($1)) } == 0
    }

    /// Queues `bytes` for sending; false when memory is short.
    public func write(_ bytes: [UInt8]) -> Bool {
        bufferevent_write(bev, bytes, bytes.count) == 0
    }

    /// Reads from now on, reporting through `onReadable`.
    public func startReading() -> Bool {
        bufferevent_enable(bev, Int16(EV_READ)) == 0
    }

    public var fd: Int32 { bufferevent_getfd(bev) }

    /// The TLS session (OpenSSL's `SSL *`), nil for plain TCP: for what a failed handshake
    /// left behind (the verify result, whether the peer said anything).
    public var ssl: OpaquePointer? { bufferevent_openssl_get_ssl(bev) }

    private func report(_ events: Int16, errno code: Int32) {
        if events & Int16(BEV_EVENT_CONNECTED) != 0 {
            onEvent?(.connected)
        } else if events & Int16(BEV_EVENT_EOF) != 0 {
            onEvent?(.endOfStream)
        } else if events & Int16(BEV_EVENT_ERROR) != 0 {
            onEvent?(.failed(errno: code))
        }
    }
}
