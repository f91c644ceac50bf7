import COpenSSL
import Glibc
import SidecarEvent

/// One request in flight: resolve → connect (each address in turn) → TLS → write → read.
///
/// While in flight the exchange holds a reference to itself, so the socket's, the timer's and
/// the lookup's handlers can reach it without retaining it; `finish` frees the socket (and with it the TLS
/// session), the timer and any pending lookup exactly once, drops that reference, then runs
/// the completion.
final class AppleHTTPExchange {
    private let client: AppleHTTPClient
    private let requestBytes: [UInt8]
    private var completion: ((AppleHTTPResult) -> Void)?

    private var socket: ClientSocket?
    private var timer: Timer?
    private var lookup: Resolver.Lookup?
    private var candidates: [SocketAddress] = []
    private var established = false
    private var pendingFailure: AppleHTTPFailure?
    private var startedAt: Double = 0
    private var decoder: ResponseDecoder
    private var selfReference: Unmanaged<AppleHTTPExchange>?
    /// Set inside `send` and inside the resolver's completion: a result found then is
    /// delivered from the loop instead (never re-entrantly, never while the resolver is on
    /// the stack, since the completion may release the client and with it the resolver).
    private var deliverLater = false

    init(client: AppleHTTPClient, requestBytes: [UInt8], completion: @escaping (AppleHTTPResult) -> Void) {
        self.client = client
        self.requestBytes = requestBytes
        self.completion = completion
        decoder = ResponseDecoder(
            maxHeadBytes: client.configuration.maxHeadBytes,
            maxBodyBytes: client.configuration.maxBodyBytes)
    }

    func start() {
        selfReference = Unmanaged.passRetained(self)
        deliverLater = true
        defer { deliverLater = false }
        startedAt = monotonicSeconds()
        timer = Timer(base: client.base) { [unowned self] in self.deadlineReached() }
        guard timer?.isUsable == true else { return failSoon(.connectFailed) }
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
        guard let resolver = client.resolver() else { return failSoon(.dnsFailure) }
        let lookup = resolver.lookup(host, port: client.configuration.endpoint.port) { [weak self] addresses in
            guard let self else { return }
            let outer = deliverLater
            deliverLater = true
            resolved(addresses)
            deliverLater = outer
        }
        // The completion may already have run (hosts file, immediate failure).
        if !lookup.isFinished { self.lookup = lookup }
    }

    private func resolved(_ addresses: [SocketAddress]) {
        lookup = nil
        candidates.append(contentsOf: addresses)
        if candidates.isEmpty { return finish(.failure(.dnsFailure)) }
        connectNext()
    }

    // MARK: Connect

    private func connectNext() {
        guard !candidates.isEmpty else { return }
        let address = candidates.removeFirst()
        let endpoint = client.configuration.endpoint
        let socket: ClientSocket
        do {
            socket = try ClientSocket(
                base: client.base, tls: client.tls, host: endpoint.host, isIPLiteral: endpoint.isIPLiteral)
        } catch {
            return finish(.failure(error == .tls ? .tlsHandshakeFailed(verifyResult: 0) : .connectFailed))
        }
        // Unowned: the socket is this exchange's, and is freed before the exchange lets go of itself.
        socket.onReadable = { [unowned self] in self.readable() }
        socket.onEvent = { [unowned self] in self.event($0) }
        self.socket = socket
        if !socket.connect(to: address) { connectionAttemptFailed(.connectFailed) }
    }

    /// A failure before the connection was usable: try the next address, else report it.
    private func connectionAttemptFailed(_ failure: AppleHTTPFailure) {
        freeConnection()
        if failure == .connectFailed, !candidates.isEmpty { return connectNext() }
        finish(.failure(failure))
    }

    // MARK: Events

    private func event(_ event: ClientSocket.Event) {
        guard let socket else { return }
        if event == .connected {
            established = true
            armTimer(seconds: max(0, client.configuration.totalTimeout - (monotonicSeconds() - startedAt)))
            guard socket.write(requestBytes), socket.startReading() else {
                return finish(.failure(.connectionClosed))
            }
            return
        }
        if !established { return connectionAttemptFailed(classifyEarlyFailure(socket)) }
        drainInput(socket)
        guard completion != nil else { return }
        if event == .endOfStream {
            finish(decoder.finishAtEOF())
        } else {
            finish(.failure(.connectionClosed))
        }
    }

    private func readable() {
        guard let socket else { return }
        drainInput(socket)
    }

    private func drainInput(_ socket: ClientSocket) {
        let input = socket.input
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while completion != nil, !input.isEmpty {
            let read = chunk.withUnsafeMutableBytes { input.remove(into: $0) }
            guard read > 0 else { return }
            if let result = decoder.consume(chunk[0..<read]) { return finish(result) }
        }
    }

    /// Tells a TCP failure (never connected, nothing received) from a TLS one.
    private func classifyEarlyFailure(_ socket: ClientSocket) -> AppleHTTPFailure {
        let tcpConnected = SocketAddress.isConnected(socket.fd)
        guard client.tls != nil, let ssl = socket.ssl else {
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
        if timer?.isUsable != true {
            // A second try at a timer; with no way back to the loop, nothing else can hold
            // the caller's callback.
            timer = Timer(base: client.base) { [unowned self] in self.deadlineReached() }
            guard timer?.isUsable == true else { return finish(.failure(failure)) }
        }
        armTimer(seconds: 0)
    }

    /// Rounded up to whole milliseconds, from a fresh clock read: a deadline never ends early.
    private func armTimer(seconds: Double) {
        timer?.schedule(afterMilliseconds: Int64((seconds * 1000).rounded(.up)))
    }

    private func freeConnection() { socket = nil }

    private func finish(_ result: AppleHTTPResult) {
        guard let completion else { return }
        if deliverLater, case .failure(let failure) = result { return failSoon(failure) }
        self.completion = nil
        freeConnection()
        timer?.cancel()
        timer = nil
        lookup?.cancel()
        lookup = nil
        candidates = []
        let reference = selfReference
        selfReference = nil
        completion(result)
        reference?.release()
    }
}

func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1_000_000_000
}
