import SidecarHTTP

/// Turns the bytes of one response (on a `Connection: close` exchange) into an
/// `AppleHTTPResult`, using SidecarHTTP's strict head parser and chunked decoder.
/// Interim 1xx heads are skipped; head and body sizes are bounded.
struct ResponseDecoder {
    private let headLimits: HTTPHeadLimits
    private let maxBodyBytes: Int
    private var pending: [UInt8] = []
    private var head: HTTPResponseHead?
    private var body: [UInt8] = []
    private var remaining: UInt64 = 0
    private var chunked = ChunkedDecoder()

    init(maxHeadBytes: Int, maxBodyBytes: Int) {
        headLimits = HTTPHeadLimits(maxHeadBytes: maxHeadBytes)
        self.maxBodyBytes = maxBodyBytes
    }

    /// Feeds received bytes; returns the result once the response is complete or broken.
    mutating func consume(_ bytes: ArraySlice<UInt8>) -> AppleHTTPResult? {
        guard let head else {
            pending.append(contentsOf: bytes)
            return parseHead()
        }
        return consumeBody(bytes, framing: head.framing)
    }

    /// The peer closed the connection: complete only if the body runs until close.
    func finishAtEOF() -> AppleHTTPResult {
        guard let head, head.framing == .untilClose else { return .failure(.connectionClosed) }
        return complete(head)
    }

    private mutating func parseHead() -> AppleHTTPResult? {
        while true {
            let parsed: HTTPResponseHead?
            do {
                parsed = try HTTPResponseHead.parse(pending, requestMethod: .post, limits: headLimits)
            } catch .headTooLarge {
                return .failure(.bodyTooLarge)
            } catch {
                return .failure(.malformedResponse)
            }
            guard let parsed else { return nil }
            let rest = pending[parsed.headLength...]
            if parsed.isInterim {
                pending = Array(rest)
                continue
            }
            if parsed.isSwitchingProtocols { return .failure(.malformedResponse) }
            pending = []
            head = parsed
            switch parsed.framing {
            case .none:
                return complete(parsed)
            case .contentLength(let length):
                guard length <= UInt64(maxBodyBytes) else { return .failure(.bodyTooLarge) }
                remaining = length
                if length == 0 { return complete(parsed) }
            case .chunked, .untilClose:
                break
            }
            return rest.isEmpty ? nil : consumeBody(rest, framing: parsed.framing)
        }
    }

    private mutating func consumeBody(_ bytes: ArraySlice<UInt8>, framing: BodyFraming) -> AppleHTTPResult? {
        guard let head else { return nil }
        switch framing {
        case .none:
            return complete(head)
        case .contentLength:
            let take = Int(min(remaining, UInt64(bytes.count)))
            body.append(contentsOf: bytes.prefix(take))
            remaining -= UInt64(take)
            return remaining == 0 ? complete(head) : nil
        case .untilClose:
            guard body.count + bytes.count <= maxBodyBytes else { return .failure(.bodyTooLarge) }
            body.append(contentsOf: bytes)
            return nil
        case .chunked:
            return consumeChunked(bytes, head: head)
        }
    }

    private mutating func consumeChunked(_ bytes: ArraySlice<UInt8>, head: HTTPResponseHead) -> AppleHTTPResult? {
        let input = Array(bytes)
        return input.withUnsafeBytes { raw -> AppleHTTPResult? in
            var index = 0
            while true {
                let event: ChunkedDecoder.Event
                do {
                    event = try chunked.next(raw, index: &index)
                } catch {
                    return .failure(.malformedResponse)
                }
                switch event {
                case .data(let range):
                    guard body.count + range.count <= maxBodyBytes else { return .failure(.bodyTooLarge) }
                    body.append(contentsOf: raw[range])
                case .trailer:
                    break  // not reported: this decoder drops trailers
                case .needMoreData:
                    return nil
                case .end:
                    return complete(head)
                }
            }
        }
    }

    private func complete(_ head: HTTPResponseHead) -> AppleHTTPResult {
        let headers = head.fields.map { (name: head.string($0.name), value: head.string($0.value)) }
        return .response(AppleHTTPResponse(status: head.status, headers: headers, body: body))
    }
}
