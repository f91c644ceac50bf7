import CEvent
import Glibc
import SidecarHTTP

/// One client connection of a `ServiceServer`: reads a request head (strict parser, total
/// header deadline), buffers its body up to the limit, hands the request to the handler and
/// writes its answer; keep-alive and pipelining by processing one request at a time.
final class ServiceConnection {
    private enum Phase {
        case head
        case fixedBody(HTTPRequestHead, remaining: Int)
        case chunkedBody(HTTPRequestHead, ChunkedDecoder)
        case handling
        case closing
    }

    private unowned let server: ServiceServer
    private let bev: OpaquePointer
    private let peer: SocketAddress
    private let isSecure: Bool
    private var phase = Phase.head
    private var body: [UInt8] = []
    private var headStarted = false
    private var peerClosed = false
    private var generation: UInt64 = 0
    private var timer: Timer?
    private(set) var isClosed = false

    init(server: ServiceServer, loop: EventLoop, bev: OpaquePointer, peer: SocketAddress, isSecure: Bool) {
        self.server = server
        self.bev = bev
        self.peer = peer
        self.isSecure = isSecure
        timer = Timer(loop: loop) { [unowned self] in self.deadlinePassed() }
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bev, { _, context in
            guard let context else { return }
            Unmanaged<ServiceConnection>.fromOpaque(context).takeUnretainedValue().readable()
        }, { _, context in
            guard let context else { return }
            Unmanaged<ServiceConnection>.fromOpaque(context).takeUnretainedValue().drained()
        }, { _, what, context in
            guard let context else { return }
            Unmanaged<ServiceConnection>.fromOpaque(context).takeUnretainedValue().event(what)
        }, context)
        // Bounded input: reading pauses once a whole maximal request is buffered.
        let options = server.options
        bufferevent_setwatermark(bev, Int16(EV_READ), 0, options.maxHeadBytes + options.maxBodyBytes + 65_536)
        _ = bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
        timer?.schedule(afterMilliseconds: options.idleTimeoutMs)
    }

    deinit {
        timer?.cancel()
        if !isClosed {
            bufferevent_setcb(bev, nil, nil, nil, nil)
            bufferevent_free(bev)
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        timer?.cancel()
        bufferevent_setcb(bev, nil, nil, nil, nil)
        bufferevent_free(bev)
        server.connectionClosed(self)
    }

    // MARK: events

    private func event(_ what: Int16) {
        if Int32(what) & BEV_EVENT_CONNECTED != 0 { return }
        if Int32(what) & BEV_EVENT_EOF != 0, case .handling = phase {
            peerClosed = true  // a half-closed client still gets its answer
            return
        }
        close()
    }

    /// Also called spuriously (a socket that became writable with nothing queued), hence the check.
    private func drained() {
        if case .closing = phase { finishIfFlushed() }
    }

    private func deadlinePassed() {
        if case .head = phase, headStarted {
            fail(408, "request head timeout\n")
        } else if case .handling = phase {
            return
        } else {
            close()
        }
    }

    // MARK: reading

    private func readable() {
        guard !isClosed, let input = bufferevent_get_input(bev) else { return }
        while !isClosed {
            let length = evbuffer_get_length(input)
            switch phase {
            case .handling, .closing:
                return
            case .head:
                guard length > 0 else { return }
                if !headStarted {
                    headStarted = true
                    timer?.schedule(afterMilliseconds: server.options.headerTimeoutMs)
                }
                guard readHead(input, length) else { return }
            case .fixedBody(let head, let remaining):
                let take = min(length, remaining)
                if take > 0 {
                    let start = body.count
                    body.append(contentsOf: repeatElement(0, count: take))
                    _ = body.withUnsafeMutableBytes { evbuffer_remove(input, $0.baseAddress! + start, take) }
                }
                if remaining - take > 0 {
                    phase = .fixedBody(head, remaining: remaining - take)
                    return
                }
                dispatch(head)
            case .chunkedBody(let head, var decoder):
                guard length > 0 else { return }
                guard readChunked(input, length, head, &decoder) else { return }
            }
        }
    }

    /// Parses a head from the buffered input; false when more bytes are needed or it failed.
    private func readHead(_ input: OpaquePointer, _ length: Int) -> Bool {
        let limits = HTTPHeadLimits(maxHeadBytes: server.options.maxHeadBytes)
        let window = min(length, server.options.maxHeadBytes)
        guard let base = evbuffer_pullup(input, window) else { return false }
        let parsed: HTTPRequestHead?
        do {
            parsed = try HTTPRequestHead.parse(UnsafeRawBufferPointer(start: base, count: window), limits: limits)
        } catch {
            fail(error.status, error.status == 431 ? "request head too large\n" : "bad request\n")
            return false
        }
        guard let head = parsed else {
            if window >= server.options.maxHeadBytes { fail(431, "request head too large\n") }
            return false
        }
        evbuffer_drain(input, head.headLength)
        body = []
        timer?.schedule(afterMilliseconds: server.options.bodyTimeoutMs)
        switch head.framing {
        case .none, .untilClose:
            dispatch(head)
        case .contentLength(let count):
            guard count <= UInt64(server.options.maxBodyBytes) else {
                fail(413, "request body too large\n")
                return false
            }
            body.reserveCapacity(Int(count))
            phase = .fixedBody(head, remaining: Int(count))
            continueIfExpected(head, input)
        case .chunked:
            phase = .chunkedBody(head, ChunkedDecoder())
            continueIfExpected(head, input)
        }
        return true
    }

    private func continueIfExpected(_ head: HTTPRequestHead, _ input: OpaquePointer) {
        guard head.connection.expectContinue, evbuffer_get_length(input) == 0 else { return }
        let line: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
        _ = bufferevent_write(bev, line.utf8Start, line.utf8CodeUnitCount)
    }

    private func readChunked(_ input: OpaquePointer, _ length: Int, _ head: HTTPRequestHead,
                             _ decoder: inout ChunkedDecoder) -> Bool {
        guard let base = evbuffer_pullup(input, length) else { return false }
        let buffer = UnsafeRawBufferPointer(start: base, count: length)
        var index = 0
        var finished = false
        decoding: while true {
            let event: ChunkedDecoder.Event
            do { event = try decoder.next(buffer, index: &index) } catch {
                fail(400, "bad chunked body\n")
                return false
            }
            switch event {
            case .data(let range):
                guard body.count + range.count <= server.options.maxBodyBytes else {
                    fail(413, "request body too large\n")
                    return false
                }
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[range]))
            case .trailer:
                break  // not reported: this decoder drops trailers
            case .needMoreData:
                break decoding
            case .end:
                finished = true
                break decoding
            }
        }
        evbuffer_drain(input, index)
        if finished {
            dispatch(head)
            return true
        }
        phase = .chunkedBody(head, decoder)
        return false
    }

    // MARK: answering

    private func dispatch(_ head: HTTPRequestHead) {
        phase = .handling
        timer?.cancel()
        generation &+= 1
        let token = generation
        let request = ServiceRequest(head: head, body: body, peer: peer, isSecure: isSecure)
        body = []
        server.handler(request) { [weak self] response in
            self?.respond(response, to: head, token: token)
        }
    }

    private func respond(_ response: ServiceResponse, to head: HTTPRequestHead, token: UInt64) {
        guard !isClosed, token == generation, case .handling = phase else { return }
        let keepAlive = server.options.keepAlive && head.connection.keepAlive && !peerClosed && !server.isClosing
        let bytes = response.serialized(keepAlive: keepAlive, omitBody: head.method == .head)
        _ = bytes.withUnsafeBytes { bufferevent_write(bev, $0.baseAddress, $0.count) }
        if keepAlive {
            phase = .head
            headStarted = false
            timer?.schedule(afterMilliseconds: server.options.idleTimeoutMs)
            readable()
        } else {
            phase = .closing
            finishIfFlushed()
        }
    }

    /// Answers an error and closes the connection once the answer is written.
    private func fail(_ status: Int, _ message: String) {
        let bytes = ServiceResponse.text(status, message).serialized(keepAlive: false, omitBody: false)
        _ = bytes.withUnsafeBytes { bufferevent_write(bev, $0.baseAddress, $0.count) }
        phase = .closing
        timer?.schedule(afterMilliseconds: server.options.idleTimeoutMs)
        finishIfFlushed()
    }

    private func finishIfFlushed() {
        _ = bufferevent_disable(bev, Int16(EV_READ))
        if let output = bufferevent_get_output(bev), evbuffer_get_length(output) == 0 { close() }
    }

    /// Closes an idle keep-alive connection (graceful shutdown); busy ones close after answering.
    func closeIfIdle() {
        if case .head = phase, !headStarted { close() }
    }
}
