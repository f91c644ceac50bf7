import SidecarHTTP
import SidecarHTTP2

/// The exchanges' response heads, typed, as HEADERS: the fields go through the same rules an
/// HTTP/1.1 client's head goes through (`ForwardedFields` for an upstream's head, the one
/// field list of `LocalResponse` for the sidecar's own answers) straight into the session's
/// field list; the body follows as the plain bytes the exchange writes to its output.
extension HTTP2Connection {
    /// The upstream's final head for `client`'s stream; `setCookie`: a re-sealed session.
    func respond(for client: ClientConnection, with head: HTTPResponseHead, setCookie: [UInt8]?) {
        guard let exchange = openExchange(of: client) else { return }
        exchange._withUnsafeGuaranteedRef { respond(in: $0, with: head, setCookie: setCookie) }
    }

    private func respond(in exchange: H2StreamExchange, with head: HTTPResponseHead, setCookie: [UInt8]?) {
        let fields = session.nextResponseHead
        fields.appendStatus(head.status)
        head.withView { view in
            view.forEachForwardedField(connection: head.connection, forwarding: .hopByHopOnly) { name, value in
                fields.append(lowercasing: name, value: value)
            }
        }
        if let setCookie {
            setCookie.withUnsafeBytes { value in
                Self.setCookieName.withUTF8Buffer { fields.append(lowercasing: UnsafeRawBufferPointer($0), value: value) }
            }
        }
        submit(exchange, hasBody: head.framing != .none)
    }

    /// One of the sidecar's own answers for `client`'s stream, head and body.
    func respond(for client: ClientConnection, with answer: LocalResponse, headOnly: Bool, requestId: [UInt8]) {
        guard let exchange = openExchange(of: client) else { return }
        exchange._withUnsafeGuaranteedRef { respond(in: $0, with: answer, headOnly: headOnly, requestId: requestId) }
    }

    private func respond(in exchange: H2StreamExchange, with answer: LocalResponse, headOnly: Bool, requestId: [UInt8]) {
        let fields = session.nextResponseHead
        fields.appendStatus(answer.status)
        answer.forEachField(requestId: requestId) { name, value in fields.append(lowercasing: name, value: value) }
        let hasBody = !headOnly && answer.bodyCount(requestId: requestId) > 0
        if hasBody {
            let output = exchange.output
            answer.writeBody(requestId: requestId) { _ = output.append($0) }
        }
        submit(exchange, hasBody: hasBody)
        if hasBody { exchange.response = .body(complete: true) }
    }

    /// `client` wrote the last of its response body to its output; `trailers`: the trailer
    /// section of a chunked upstream body (`BodyRelay.trailerSection`), sent after it as the
    /// rules for forwarded trailers allow (`TrailerFields`).
    func responseBodyComplete(for client: ClientConnection, trailers: [UInt8]) {
        guard let exchange = openExchange(of: client) else { return }
        exchange._withUnsafeGuaranteedRef { bodyComplete(in: $0, trailers: trailers) }
    }

    private func bodyComplete(in exchange: H2StreamExchange, trailers: [UInt8]) {
        guard case .body(complete: false) = exchange.response else { return }
        exchange.response = .body(complete: true)
        if !trailers.isEmpty {
            let fields = H2FieldList()
            trailers.withUnsafeBytes { section in
                TrailerFields.forEach(section, forwarding: .hopByHopOnly) { fields.append(lowercasing: $0, value: $1) }
            }
            if fields.count > 0 { exchange.responseTrailers = fields }
        }
        if exchange.bodyDeferred, !exchange.outputReady {
            exchange.outputReady = true
            outputReady.append(exchange)
            scheduleSend()
        }
    }

    /// The exchange of `client`'s stream while the stream is open, unretained: the calls here
    /// close no stream (a refusal is a reset queued in the session), so the stream table's
    /// reference keeps it throughout.
    private func openExchange(of client: ClientConnection) -> Unmanaged<H2StreamExchange>? {
        guard let exchange = exchanges.unretained(client.stream.carrierTag),
            !exchange._withUnsafeGuaranteedRef({ $0.streamClosed })
        else { return nil }
        return exchange
    }

    private func submit(_ exchange: H2StreamExchange, hasBody: Bool) {
        guard case .awaitingHead = exchange.response else { return }
        exchange.response = hasBody ? .body(complete: false) : .complete
        if !session.respond(exchange.id, hasBody: hasBody) {
            session.reset(exchange.id)
        } else if !hasBody, !exchange.requestEnded {
            session.reset(exchange.id, code: 0)  // NO_ERROR: the upload is not needed
        }
        scheduleSend()
    }

    private static let setCookieName: StaticString = "set-cookie"
}
