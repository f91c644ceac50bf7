import Glibc
import Logging
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2

/// The session's stream events in, and the exchanges' responses out as HEADERS and DATA.
extension HTTP2Connection: H2SessionDelegate, StreamCarrier {
    // MARK: session → exchanges

    func h2Request(_ id: Int32, _ outcome: consuming H2RequestHead.Outcome, endStream: Bool) {
        lastActiveMs = context.nowMs
        guard machine.takesStreams else {
            session.reset(id, code: 7)  // REFUSED_STREAM: a drained connection takes nothing new
            return
        }
        let exchange: H2StreamExchange
        if let idle = takeIdleExchange() {
            idle.begin(id: id, request: outcome, requestEnded: endStream)
            exchange = idle
        } else {
            let client = ClientConnection(context: context, carriedBy: self, peerText: peerText, peerTrusted: peerTrusted)
            exchange = H2StreamExchange(id: id, client: client, request: outcome, requestEnded: endStream)
        }
        exchanges.insert(exchange)
        exchange.client.stream.carrierTag = id
        exchange.deliveryPending = true
        deliveries.append(exchange)
        context.metrics.recordHTTP2Stream()
    }

    func h2SpareHead() -> HeadArrays { context.scratch.spareHead() }

    func h2RequestData(_ id: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let exchange = exchanges[id], !exchange.exchangeClosed, bytes.count > 0 else {
            // Nobody will take them: give the window back at once.
            session.consume(id, bytes.count)
            return
        }
        let input = exchange.client.stream.input
        if exchange.chunkedRequest {
            ChunkedEncoder.withChunkHeader(size: bytes.count) { _ = input.append($0) }
            _ = input.append(bytes)
            _ = input.append(ChunkedEncoder.chunkEnd)
        } else {
            _ = input.append(bytes)
        }
        exchange.unacknowledged += bytes.count
        if !exchange.deliveryPending {
            exchange.deliveryPending = true
            deliveries.append(exchange)
        }
    }

    /// Trailers pass to the exchange in the chunked framing its body already has, where the
    /// relay holds them to the same rules as an HTTP/1.1 client's (`TrailerFields`); a body
    /// with a `content-length` has no place for them in HTTP/1.1, and they are dropped.
    func h2RequestTrailer(_ id: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let exchange = exchanges[id], exchange.chunkedRequest, !exchange.requestEnded else { return }
        exchange.requestTrailers.append(contentsOf: name)
        exchange.requestTrailers.append(contentsOf: ": ".utf8)
        exchange.requestTrailers.append(contentsOf: value)
        exchange.requestTrailers.append(contentsOf: "\r\n".utf8)
        if exchange.requestTrailers.count > Self.maxTrailerBytes { session.reset(id, code: 0xb) }  // ENHANCE_YOUR_CALM
    }

    /// As `ChunkedDecoder.Limits.maxTrailerBytes`: a larger section would be refused there.
    static let maxTrailerBytes = 8192

    func h2RequestEnded(_ id: Int32) {
        guard let exchange = exchanges[id], !exchange.requestEnded else { return }
        exchange.requestEnded = true
        guard !exchange.exchangeClosed else { return }
        if exchange.chunkedRequest {
            let input = exchange.client.stream.input
            if exchange.requestTrailers.isEmpty {
                _ = input.append(ChunkedEncoder.lastChunk)
            } else {
                _ = input.append("0\r\n")
                _ = input.append(exchange.requestTrailers)
                _ = input.append("\r\n")
                exchange.requestTrailers = []
            }
        }
        if !exchange.deliveryPending {
            exchange.deliveryPending = true
            deliveries.append(exchange)
        }
    }

    func h2StreamClosed(_ id: Int32, errorCode: UInt32) {
        guard let exchange = exchanges.remove(id) else { return }
        exchange.streamClosed = true
        lastActiveMs = context.nowMs
        if !exchange.exchangeClosed, exchange.answeredInFull {
            keepIdle(consume exchange)  // the table's reference handed to the pool: no retain
        } else {
            if !exchange.exchangeClosed {
                // Reset by the client (or cut short): the exchange ends as when a client goes
                // away. The connection stays alive until then: the exchange's stream calls back
                // into it.
                let client = exchange.client
                context.loop.nextTurn.run { [self] in
                    withExtendedLifetime(self) { client.clientEnded() }
                }
            } else if exchange.client.phase != .closed {
                exchange.client.close()  // it may still be waiting for a deadline of its own
            }
            // Never reused: the connection's queues may still name it for this turn.
            context.reaper.retire(exchange)
        }
        if exchanges.isEmpty { armDeadline() }
    }

    /// An exchange kept after its stream, if its carried connection is still open (its own
    /// idle deadline may have closed it since).
    private func takeIdleExchange() -> H2StreamExchange? {
        while let exchange = idleExchanges.popLast() {
            let client = exchange.client
            if client.phase == .waitingForHead, !client.stream.isClosed { return exchange }
        }
        return nil
    }

    /// Keeps an exchange whose stream was answered in full, and its carried connection, for a
    /// later stream. Its tag no longer names a stream, so anything the connection still
    /// reports (its idle deadline closing it) finds none.
    private func keepIdle(_ exchange: consuming H2StreamExchange) {
        exchange.client.stream.carrierTag = 0
        if !machine.takesStreams || idleExchanges.count >= maxStreams {
            exchange.client.close()
            context.reaper.retire(exchange)
        } else {
            idleExchanges.append(exchange)
        }
    }

    func h2ResponseBody(_ id: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2Session.Body {
        // Unretained: taking a body closes no stream (the resets are queued in the session).
        guard let exchange = exchanges.unretained(id) else { return .bytes(0, end: true) }
        return exchange._withUnsafeGuaranteedRef { responseBody(of: $0, into: buffer) }
    }

    private func responseBody(of exchange: H2StreamExchange, into buffer: UnsafeMutableRawBufferPointer) -> H2Session.Body {
        let id = exchange.id
        let hadOutput = exchange.output.count > 0
        let taken = exchange.takeBody(into: buffer)
        exchange.client.stream.recordCarriedWrite(taken.count)
        if hadOutput, exchange.output.count == 0 { drained.append(exchange) }
        if taken.end {
            if !exchange.requestEnded { session.reset(id, code: 0) }  // NO_ERROR: the upload is not needed
            if let trailers = exchange.responseTrailers { return .lastBeforeTrailers(taken.count, trailers) }
            return .bytes(taken.count, end: true)
        }
        if taken.count == 0 {
            if exchange.exchangeClosed {
                // The exchange gave up before its body was complete.
                session.reset(id)
                return .deferred
            }
            exchange.bodyDeferred = true
            return .deferred
        }
        return .bytes(taken.count, end: false)
    }

    func h2Refused(_ reason: H2Session.Refusal) {
        context.metrics.recordHTTP2Refusal(reason)
        context.log.http2Refused(reason, peer: peerText)
    }

    // MARK: exchanges → session

    func carriedStreamHasOutput(_ carried: Stream) {
        guard let exchange = exchanges[carried.carrierTag], !exchange.streamClosed else {
            carried.output.drain(carried.output.count)
            return
        }
        if !exchange.outputReady {
            exchange.outputReady = true
            outputReady.append(exchange)
        }
        scheduleSend()
    }

    /// Wakes the deferred bodies of the exchanges that wrote more of them.
    func takeResponses() {
        var next = 0
        while next < outputReady.count {
            let exchange = outputReady[next]
            next += 1
            exchange.outputReady = false
            guard !exchange.streamClosed, exchange.bodyDeferred else { continue }
            exchange.bodyDeferred = false
            session.resumeBody(exchange.id)
        }
        outputReady.empty()
    }

    func carriedStreamWantsInput(_ carried: Stream) {
        guard let exchange = exchanges[carried.carrierTag] else { return }
        acknowledge(exchange)
    }

    func carriedStreamClosed(_ carried: Stream) {
        guard let exchange = exchanges[carried.carrierTag] else { return }
        exchange.exchangeClosed = true
        if exchange.streamClosed { return }
        // An exchange closes once it answered in full (what is left of its body still goes
        // out); closing before its head or in the middle of its body (a client that stopped
        // reading, a broken upstream) means the response cannot be completed: the stream is
        // reset.
        switch exchange.response {
        case .awaitingHead, .body(complete: false):
            session.reset(exchange.id)
        case .body(complete: true):
            if exchange.bodyDeferred {
                exchange.bodyDeferred = false
                session.resumeBody(exchange.id)
            }
        case .complete:
            break
        }
        scheduleSend()
    }
}
