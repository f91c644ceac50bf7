import SidecarEvent
import SidecarHTTP

/// A request to one of the sidecar's own endpoints: its body while it is buffered (at most
/// the endpoint's cap), and whether an answer that comes later is still for the exchange in
/// progress. Stored inline in the connection, across its exchanges: the buffer is freed when
/// the body is complete or refused, or the exchange ends without it.
struct LocalEndpointCall {
    /// Set while a body is buffered (its presence is what every exchange's end checks: one
    /// pointer, where an optional of all three costs a test of the relay's enum as well).
    private var body: ByteQueue?
    private var relay: BodyRelay?
    private var endpoint: AuthEndpoint?
    /// Bumped as each exchange ends: an answer carrying an earlier number is late.
    private var generation: UInt64 = 0

    enum Progress: Equatable {
        case needMore
        /// The body broke its framing (400) or its cap (413); the buffer is freed.
        case refused(status: Int)
        /// The whole body, taken out of the freed buffer, for `endpoint`.
        case complete(AuthEndpoint, body: [UInt8])
    }

    /// A body is being buffered (the client's bytes go here, not to a head or an upstream).
    var isBuffering: Bool { body != nil }

    /// Begins buffering a body framed as `framing`, at most `limit` bytes. False when no
    /// buffer could be had.
    mutating func startBuffering(_ endpoint: AuthEndpoint, framing: BodyFraming, limit: UInt64) -> Bool {
        guard let body = ByteQueue.allocate() else { return false }
        self.body = body
        relay = BodyRelay(framing: framing, chunkOutput: false, limit: limit)
        self.endpoint = endpoint
        return true
    }

    /// Takes what `input` holds of the body.
    mutating func buffer(from input: ByteQueue) -> Progress {
        guard let body, var relay, let endpoint else { return .needMore }
        let progress = relay.relay(from: input, to: body)
        switch progress {
        case .needMore:
            self.relay = relay
            return .needMore
        case .invalid, .tooLarge:
            dropBody()
            return .refused(status: progress == .invalid ? 400 : 413)
        case .done:
            let bytes = body.removeAll()
            dropBody()
            return .complete(endpoint, body: bytes)
        }
    }

    /// Frees a body still being buffered.
    mutating func dropBody() {
        guard let body else { return }
        body.deallocate()
        self.body = nil
        relay = nil
        endpoint = nil
    }

    /// The exchange ended (answered, timed out, the client gone): an answer asked for
    /// during it is late from now on, and a body still being buffered is dropped.
    mutating func exchangeEnded() {
        generation &+= 1
        if body != nil { dropBody() }
    }

    /// What an answer asked for now must carry to be current (`isCurrent`).
    var ticket: UInt64 { generation }

    /// Whether an answer is for the exchange in progress, not one that ended since.
    func isCurrent(_ ticket: UInt64) -> Bool { ticket == generation }
}
