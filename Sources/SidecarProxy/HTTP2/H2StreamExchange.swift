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

    init(id: Int32, client: ClientConnection, chunkedRequest: Bool, isHead: Bool, requestEnded: Bool) {
        self.id = id
        self.client = client
        self.chunkedRequest = chunkedRequest
        self.isHead = isHead
        self.requestEnded = requestEnded
    }

    var output: ByteQueue { client.stream.output }

    /// The response head, once the exchange has written it, as HTTP/2 fields in `fields`
    /// (`:status` first, lowercase names, the connection-specific fields of RFC 9113 §8.2.2
    /// left out); returns whether a body follows, nil while the head is incomplete. Interim
    /// 1xx heads are skipped. Throws for a head that cannot be translated.
    func takeResponseHead(into fields: inout H2FieldList) throws(HTTPHeadError) -> Bool? {
        while true {
            let available = output.count
            guard available > 0, let prefix = output.unsafePrefix(available) else { return nil }
            guard let head = try HTTPResponseHead.parse(prefix, requestMethod: isHead ? .head : .get, limits: Self.headLimits)
            else { return nil }
            let length = head.headLength
            if head.isInterim {
                output.drain(length)
                continue
            }
            fields.removeAll()
            fields.appendStatus(head.status)
            head.withView { view in
                for field in head.fields where !Self.isConnectionSpecific(field, view) {
                    fields.append(lowercasing: view[field.name], value: view[field.value])
                }
            }
            output.drain(length)
            switch head.framing {
            case .none:
                response = .complete
                return false
            case .contentLength(let n):
                response = n == 0 ? .complete : .body(remaining: n)
                return n > 0
            case .chunked:
                response = .chunked(ChunkedDecoder())
                return true
            case .untilClose:
                response = .untilClose
                return true
            }
        }
    }

    static let headLimits = HTTPHeadLimits(maxHeadBytes: 64 * 1024, maxFields: 200)

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

    var awaitingHead: Bool {
        if case .awaitingHead = response { return true }
        return false
    }

    /// RFC 9113 §8.2.2: fields that only mean something to one HTTP/1.1 hop.
    static func isConnectionSpecific(_ field: HTTPField, _ view: HeadView) -> Bool {
        view.name(of: field, is: "connection") || view.name(of: field, is: "keep-alive")
            || view.name(of: field, is: "proxy-connection") || view.name(of: field, is: "transfer-encoding")
            || view.name(of: field, is: "upgrade")
    }
}
