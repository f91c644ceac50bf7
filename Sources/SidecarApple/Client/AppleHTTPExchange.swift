import CEvent
import COpenSSL
import Glibc
import SidecarEvent

/// One request in flight: resolve → connect (each address in turn) → TLS → write → read.
///
/// While in flight the exchange holds a reference to itself, so C callbacks can point at it
/// unretained; `finish` frees the bufferevent (and with it the SSL and socket), the timer and
/// any pending lookup exactly once, drops that reference, then runs the completion.
final class AppleHTTPExchange {
    private let client: AppleHTTPClient
    private let requestBytes: [UInt8]
    private var completion: ((AppleHTTPResult) -> Void)?

    private var bev: OpaquePointer?
    private var timer: OpaquePointer?
    private var lookup: DNSLookup?
    private var candidates: [SocketAddress] = []
    private var established = false
    private var pendingFailure: AppleHTTPFailure?
    private var startedAt: Double = 0
    private var decoder: ResponseDecoder
    private var selfReference: Unmanaged<AppleHTTPExchange>?
    /// Set inside `send` and inside libevent's resolver callback: a result found then is
    /// delivered from the loop instead (never re-entrantly, never while evdns is on the stack,
    /// since the completion may release the client and with it the resolver).
    private var deliverLater = false

    init(client: AppleHTTPClient, requestBytes: [UInt8], completion: @escaping (AppleHTTPResult) -> Void) {
        self.client = client
        self.requestBytes = requestBytes
        self.completion = completion
        decoder = ResponseDecoder(
            maxHeadBytes: client.configuration.maxHeadBytes,
            maxBodyBytes: client.configuration.maxBodyBytes)
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    func start() {
        selfReference = Unmanaged.passRetained(self)
        deliverLater = true
        defer { deliverLater = false }
        startedAt = monotonicSeconds()
        timer = sidecar_evtimer_new(client.base, { _, _, arg in
            guard let arg else { return }
            Unmanaged<AppleHTTPExchange>.fromOpaque(arg).takeUnretainedValue().deadlineReached()
        }, context)
        guard timer != nil else { return failSoon(.connectFailed) }
        armTimer(seconds: min(client.configuration.connectTimeout, client.configuration.totalTimeout))

        let endpoint = client.configuration.endpoint
        if let literal = SocketAddress.literal(endpoint.host, port: endpoint.port) {
            candidates = [literal]
            connectNext()
        } else if endpoint.host == "localhost" {
            candidates = SocketAddress.loopback(port: endpoint.port)
            connectNext()
        } else {
            resolve(endpoint.host)
        }
    }

    // MARK: DNS

    private func resolve(_ host: String) {
        guard let dns = client.dnsBase() else { return failSoon(.dnsFailure) }
        let lookup = DNSLookup(exchange: self)
        self.lookup = lookup
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        let box = Unmanaged.passRetained(lookup)
        let request = evdns_getaddrinfo(dns, host, String(client.configuration.endpoint.port), &hints, { code, info, arg in
            guard let arg else { return }
            let lookup = Unmanaged<DNSLookup>.fromOpaque(arg).takeRetainedValue()
            defer { if let info { evutil_freeaddrinfo(info) } }
            lookup.finished = true
            lookup.request = nil
            guard code != EVUTIL_EAI_CANCEL, let exchange = lookup.exchange else { return }
            let outer = exchange.deliverLater
            exchange.deliverLater = true
            exchange.resolved(code: code, info: info)
            exchange.deliverLater = outer
        }, box.toOpaque())
        // The callback may already have run (hosts file, immediate failure).
        if !lookup.finished { lookup.request = request }
    }

    private func resolved(code: Int32, info: UnsafeMutablePointer<addrinfo>?) {
        lookup = nil
        var next = code == 0 ? info : nil
        while let entry = next {
            if let address = SocketAddress(resolved: entry.pointee.ai_addr, length: entry.pointee.ai_addrlen) {
                candidates.append(address)
            }
            next = entry.pointee.ai_next
        }
        if candidates.isEmpty { return finish(.failure(.dnsFailure)) }
        connectNext()
    }

    // MARK: Connect

    private func connectNext() {
        guard !candidates.isEmpty else { return }
        let address = candidates.removeFirst()
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        let endpoint = client.configuration.endpoint
        if let tls = client.tls {
            guard let ssl = tls.makeSSL(host: endpoint.host, isIPLiteral: endpoint.isIPLiteral) else {
                return finish(.failure(.tlsHandshakeFailed(verifyResult: 0)))
            }
            bev = bufferevent_openssl_socket_new(client.base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, options)
            if bev == nil { SSL_free(ssl) }
        } else {
            bev = bufferevent_socket_new(client.base, -1, options)
        }
        guard let bev else { return finish(.failure(.connectFailed)) }
        bufferevent_setcb(bev, { _, arg in
            guard let arg else { return }
            Unmanaged<AppleHTTPExchange>.fromOpaque(arg).takeUnretainedValue().readable()
        }, nil, { _, events, arg in
            guard let arg else { return }
            Unmanaged<AppleHTTPExchange>.fromOpaque(arg).takeUnretainedValue().event(events)
        }, context)
        let started = address.withSockaddr { bufferevent_socket_connect(bev, $0, Int32($1)) }
        if started != 0 { connectionAttemptFailed(.connectFailed) }
    }

    /// A failure before the connection was usable: try the next address, else report it.
    private func connectionAttemptFailed(_ failure: AppleHTTPFailure) {
        freeConnection()
        if failure == .connectFailed, !candidates.isEmpty { return connectNext() }
        finish(.failure(failure))
    }

    // MARK: Events

    private func event(_ events: Int16) {
        guard let bev else { return }
        if events & Int16(BEV_EVENT_CONNECTED) != 0 {
            established = true
            armTimer(seconds: max(0, client.configuration.totalTimeout - (monotonicSeconds() - startedAt)))
            guard bufferevent_write(bev, requestBytes, requestBytes.count) == 0,
                  bufferevent_enable(bev, Int16(EV_READ)) == 0 else {
                return finish(.failure(.connectionClosed))
            }
            return
        }
        guard events & Int16(BEV_EVENT_EOF | BEV_EVENT_ERROR) != 0 else { return }
        if !established { return connectionAttemptFailed(classifyEarlyFailure(bev)) }
        drainInput(bev)
        guard completion != nil else { return }
        if events & Int16(BEV_EVENT_EOF) != 0 {
            finish(decoder.finishAtEOF())
        } else {
            finish(.failure(.connectionClosed))
        }
    }

    private func readable() {
        guard let bev else { return }
        drainInput(bev)
    }

    private func drainInput(_ bev: OpaquePointer) {
        guard let input = bufferevent_get_input(bev) else { return }
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while completion != nil, evbuffer_get_length(input) > 0 {
            let read = chunk.withUnsafeMutableBytes { evbuffer_remove(input, $0.baseAddress, $0.count) }
            guard read > 0 else { return }
            if let result = decoder.consume(chunk[0..<Int(read)]) { return finish(result) }
        }
    }

    /// Tells a TCP failure (never connected, nothing received) from a TLS one.
    private func classifyEarlyFailure(_ bev: OpaquePointer) -> AppleHTTPFailure {
        let tcpConnected = SocketAddress.isConnected(bufferevent_getfd(bev))
        guard client.tls != nil, let ssl = bufferevent_openssl_get_ssl(bev) else {
            return tcpConnected ? .connectionClosed : .connectFailed
        }
        ERR_clear_error()
        let verifyResult = SSL_get_verify_result(ssl)
        if verifyResult != X509_V_OK { return .tlsHandshakeFailed(verifyResult: verifyResult) }
        let peerSpoke = SSL_get_rbio(ssl).map { BIO_number_read($0) > 0 } ?? false
        return tcpConnected || peerSpoke ? .tlsHandshakeFailed(verifyResult: 0) : .connectFailed
    }

    // MARK: Deadline and completion

    private func deadlineReached() {
        finish(.failure(pendingFailure ?? .timeout))
    }

    /// Reports a failure from the loop's next turn (see `deliverLater`).
    private func failSoon(_ failure: AppleHTTPFailure) {
        pendingFailure = failure
        if timer != nil { return armTimer(seconds: 0) }
        let scheduled = event_base_once(client.base, -1, Int16(EV_TIMEOUT), { _, _, arg in
            guard let arg else { return }
            let exchange = Unmanaged<AppleHTTPExchange>.fromOpaque(arg).takeUnretainedValue()
            exchange.finish(.failure(exchange.pendingFailure ?? .timeout))
        }, context, nil)
        // With no way back to the loop, nothing else can hold the caller's callback.
        if scheduled != 0 { finish(.failure(failure)) }
    }

    private func armTimer(seconds: Double) {
        guard let timer else { return }
        let whole = seconds.rounded(.down)
        var tv = timeval(tv_sec: Int(whole), tv_usec: Int((seconds - whole) * 1_000_000))
        // From now, not from the iteration's cached time: a deadline never ends early.
        _ = event_base_update_cache_time(client.base)
        event_add(timer, &tv)
    }

    private func freeConnection() {
        if let bev {
            bufferevent_free(bev)
            self.bev = nil
        }
    }

    private func finish(_ result: AppleHTTPResult) {
        guard let completion else { return }
        if deliverLater, case .failure(let failure) = result { return failSoon(failure) }
        self.completion = nil
        freeConnection()
        if let timer {
            event_free(timer)
            self.timer = nil
        }
        if let lookup {
            lookup.exchange = nil
            if !lookup.finished, let request = lookup.request { evdns_getaddrinfo_cancel(request) }
            self.lookup = nil
        }
        candidates = []
        let reference = selfReference
        selfReference = nil
        completion(result)
        reference?.release()
    }
}

/// The context of one pending `evdns_getaddrinfo`; it outlives a cancelled exchange until
/// libevent reports the cancellation.
final class DNSLookup {
    weak var exchange: AppleHTTPExchange?
    var request: OpaquePointer?
    var finished = false

    init(exchange: AppleHTTPExchange) { self.exchange = exchange }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
}
