import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// One HTTP/2 stream: the exchange that serves it (a `ClientConnection` over a carried
/// `Stream`, given the typed request head) and how far its response has gone out: the head
/// as HEADERS when the exchange gives it, the body's bytes as DATA frames. Once it answered
/// its stream in full it is kept, with its connection, for a later stream (`begin`): a
/// stream then allocates nothing of its own.
final class H2StreamExchange {
    private(set) var id: Int32 = 0
    let client: ClientConnection
    /// The request body is framed as chunked for the HTTP/1.1 side (no `content-length`).
    private(set) var chunkedRequest = false
    private(set) var isHead = false
    var requestEnded = false
    /// Request body bytes handed to the exchange and not yet acknowledged to the client.
    var unacknowledged = 0
    /// Bytes are waiting in the carried input for the exchange to be told.
    var deliveryPending = false
    /// The exchange flushed output the connection has not looked at yet.
    var outputReady = false

    enum Response {
        /// Waiting for the exchange's response head.
        case awaitingHead
        /// The head went out; body bytes follow in the exchange's output until it says the
        /// body is `complete`.
        case body(complete: Bool)
        /// Every body byte was handed to the session (END_STREAM given or going).
        case complete
    }

    var response = Response.awaitingHead
    /// The request's trailer lines until its body ends (a chunked body only).
    var requestTrailers: [UInt8] = []
    /// The response's trailer fields, sent after its body.
    var responseTrailers: H2FieldList?
    /// The session holds a deferred body read for this stream (`resumeBody` wakes it).
    var bodyDeferred = false
    /// The exchange closed its side (response finished, or it gave up).
    var exchangeClosed = false
    /// The session closed the stream (answered, or reset by either side).
    var streamClosed = false

    /// The request head until the exchange is given it (after the session call that built it).
    private var request: H2RequestHead.Outcome?

    init(id: Int32, client: ClientConnection, request: consuming H2RequestHead.Outcome, requestEnded: Bool) {
        self.client = client
        begin(id: id, request: request, requestEnded: requestEnded)
    }

    /// Makes this the exchange of stream `id`: every field of the stream it served before
    /// back to its start, so nothing of that stream reaches this one (`H2StreamExchangeTests`
    /// fails when a field is added without being reset here). Queue entries left for the
    /// earlier stream find the flags they test cleared, and wake nothing.
    func begin(id: Int32, request: consuming H2RequestHead.Outcome, requestEnded: Bool) {
        self.id = id
        if case .request(let head) = request {
            chunkedRequest = head.framing == .chunked
            isHead = head.method == .head
        } else {
            chunkedRequest = false
            isHead = false
        }
        self.requestEnded = requestEnded
        unacknowledged = 0
        deliveryPending = false
        outputReady = false
        response = .awaitingHead
        if !requestTrailers.isEmpty { requestTrailers = [] }
        if responseTrailers != nil { responseTrailers = nil }
        bodyDeferred = false
        exchangeClosed = false
        streamClosed = false
        self.request = request  // moved in last: the head's arrays are not copied
    }

    func takeRequest() -> H2RequestHead.Outcome? { request.take() }

    var output: ByteQueue { client.stream.output }

    /// Moves up to `buffer.count` body bytes from the exchange's output into `buffer` (the
    /// exchange writes the body there as plain bytes, its framing already taken off).
    /// Returns the count and whether the body is complete with them.
    func takeBody(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, end: Bool) {
        guard case .body(let complete) = response else { return (0, true) }
        let count = min(buffer.count, output.count)
        copy(count, into: buffer, at: 0)
        let end = complete && output.count == 0
        if end { response = .complete }
        return (count, end)
    }

    private func copy(_ count: Int, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        guard count > 0, let prefix = output.unsafePrefix(count) else { return }
        UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + count)]).copyMemory(from: prefix)
        output.drain(count)
    }

    var responseComplete: Bool {
        if case .complete = response { return true }
        return false
    }

    /// The stream was served in full and its exchange is over, the connection kept alive with
    /// nothing of this stream left in it: it may serve another stream. Anything else (a body
    /// not taken, output not framed, an exchange still going) rules that out.
    var answeredInFull: Bool {
        let carried = client.stream
        return responseComplete && requestEnded && unacknowledged == 0 && client.phase == .waitingForHead
            && carried.pendingInput == 0 && carried.output.count == 0 && !carried.isReadPaused && !carried.isClosed
    }

    var awaitingHead: Bool {
        if case .awaitingHead = response { return true }
        return false
    }
}
