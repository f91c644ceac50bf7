import SidecarEvent
import SidecarHTTP

/// A request to one of the sidecar's own endpoints: its body while it is buffered (at most
/// the endpoint's cap), and whether an answer that comes later is still for the exchange in
/// progress. Stored inline in the connection, across its exchanges: the buffer is freed when
/// the body is complete or refused, or the exchange ends without it.
struct LocalEndpointCall {
    private struct Buffering {
        let endpoint: AuthEndpoint
        var relay: BodyRelay
        let body: ByteQueue
    }

    private var buffering: Buffering?
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
    var isBuffering: Bool { buffering != nil }

    /// Begins buffering a body framed as `framing`, at most `limit` bytes. False when no
    /// buffer could be had.
    mutating func startBuffering(_ endpoint: AuthEndpoint, framing: BodyFraming, limit: UInt64) -> Bool {
        guard let body = ByteQueue.allocate() else { return false }
        buffering = Buffering(endpoint: endpoint, relay: BodyRelay(framing: framing, chunkOutput: false, limit: limit), body: body)
        return true
    }

    /// Takes what `input` holds of the body.
    mutating func buffer(from input: ByteQueue) -> Progress {
        guard var current = buffering else { return .needMore }
        let progress = current.relay.relay(from: input, to: current.body)
        switch progress {
        case .needMore:
            buffering = current
            return .needMore
        case .invalid, .tooLarge:
            dropBody()
            return .refused(status: progress == .invalid ? 400 : 413)
        case .done:
            let body = current.body.removeAll()
            dropBody()
            return .complete(current.endpoint, body: body)
        }
    }

    /// Frees a body still being buffered.
    mutating func dropBody() {
        guard let current = buffering else { return }
        current.body.deallocate()
        buffering = nil
    }

    /// The exchange ended (answered, timed out, the client gone): an answer asked for
    /// during it is late from now on, and a body still being buffered is dropped.
    mutating func exchangeEnded() {
        generation &+= 1
        if buffering != nil { dropBody() }
    }

    /// What an answer asked for now must carry to be current (`isCurrent`).
    var ticket: UInt64 { generation }

    /// Whether an answer is for the exchange in progress, not one that ended since.
    func isCurrent(_ ticket: UInt64) -> Bool { ticket == generation }
}
