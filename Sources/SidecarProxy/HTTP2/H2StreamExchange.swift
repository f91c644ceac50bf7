import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// One HTTP/2 stream: the HTTP/1.1 exchange that serves it (a `ClientConnection` over a
/// carried `Stream`) and the translation of its HTTP/1.1 response into HEADERS and DATA.
final class H2StreamExchange {
    let id: Int32
    let client: ClientConnection
    /// The request body is framed as chunked for the HTTP/1.1 side (no `content-length`).
    let chunkedRequest: Bool
    let isHead: Bool
    var requestEnded: Bool
    /// Request body bytes handed to the exchange and not yet acknowledged to the client.
    var unacknowledged = 0
    /// Bytes are waiting in the carried input for the exchange to be told.
    var deliveryPending = false
    /// The exchange flushed output the connection has not looked at yet.
    var outputReady = false

    enum Response {
        /// Waiting for the HTTP/1.1 response head.
        case awaitingHead
        case body(remaining: UInt64)
        case chunked(ChunkedDecoder)
        case untilClose
        /// Every body byte was handed to the session (END_STREAM given or going).
        case complete
    }

    var response = Response.awaitingHead
    /// The session holds a deferred body read for this stream (`resumeBody` wakes it).
    var bodyDeferred = false
    /// The exchange closed its side (response finished, or it gave up).
    var exchangeClosed = false
    /// The session closed the stream (answered, or reset by either side).
    var streamClosed = false

    /// The request head until the exchange is given it (after the session call that built it).
    private var request: H2RequestHead.Outcome?

    init(id: Int32, client: ClientConnection, request: H2RequestHead.Outcome, requestEnded: Bool) {
        self.id = id
        self.client = client
        self.request = request
        if case .request(let head) = request {
            chunkedRequest = head.framing == .chunked
            isHead = head.method == .head
        } else {
            chunkedRequest = false
            isHead = false
        }
        self.requestEnded = requestEnded
    }

    func takeRequest() -> H2RequestHead.Outcome? { request.take() }

    var output: ByteQueue { client.stream.output }

    /// The response head, once the exchange has written it, as HTTP/2 fields in `fields`
    /// (`H2ResponseHead`); returns whether a body follows, nil while the head is incomplete.
    /// Interim 1xx heads are skipped. Throws for a head that cannot be translated.
    func takeResponseHead(into fields: H2FieldList) throws(H2ResponseHead.Malformed) -> Bool? {
        while true {
            let available = output.count
            // Most heads fit the first window: the body behind them is not pulled together.
            var window = min(available, 2048)
            var translated: (length: Int, framing: H2ResponseHead.Framing)?
            while window > 0, let prefix = output.unsafePrefix(window) {
                translated = try H2ResponseHead.translate(prefix, requestIsHead: isHead, into: fields)
                if translated != nil || window == min(available, H2ResponseHead.maxBytes) { break }
                window = min(available, H2ResponseHead.maxBytes)
            }
            guard let (length, framing) = translated else { return nil }
            output.drain(length)
            switch framing {
            case .interim:
                continue
            case .none:
                response = .complete
                return false
            case .contentLength(let n):
                response = .body(remaining: n)
                return true
            case .chunked:
                response = .chunked(ChunkedDecoder())
                return true
            case .untilClose:
                response = .untilClose
                return true
            }
        }
    }

    /// Moves up to `buffer.count` body bytes from the exchange's output into `buffer`.
    /// Returns the count and whether the body is complete with them.
    func takeBody(into buffer: UnsafeMutableRawBufferPointer) throws(ChunkedDecodingError) -> (count: Int, end: Bool) {
        switch response {
        case .awaitingHead, .complete:
            return (0, true)
        case .body(let remaining):
            let count = min(buffer.count, output.count, Int(clamping: remaining))
            copy(count, into: buffer, at: 0)
            let left = remaining - UInt64(count)
            response = left == 0 ? .complete : .body(remaining: left)
            return (count, left == 0)
        case .untilClose:
            let count = min(buffer.count, output.count)
            copy(count, into: buffer, at: 0)
            let end = exchangeClosed && output.count == 0
            if end { response = .complete }
            return (count, end)
        case .chunked(var decoder):
            defer { if case .chunked = response { response = .chunked(decoder) } }
            var filled = 0
            while filled < buffer.count, output.count > 0 {
                // The decoder yields data ranges inside the window it is given: a window no
                // larger than the room left means every range fits.
                let window = min(output.count, buffer.count - filled)
                guard let prefix = output.unsafePrefix(window) else { break }
                var index = 0
                var ended = false
                decoding: while index < prefix.count {
                    switch try decoder.next(prefix, index: &index) {
                    case .data(let range):
                        UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
                            .copyMemory(from: UnsafeRawBufferPointer(rebasing: prefix[range]))
                        filled += range.count
                    case .needMoreData:
                        break decoding
                    case .end:
                        ended = true
                        break decoding
                    }
                }
                output.drain(index)
                if ended {
                    response = .complete
                    return (filled, true)
                }
                if index == 0 { break }
            }
            return (filled, false)
        }
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
