import SidecarConfig
import SidecarEvent
import SidecarHTTP

/// Builds the head sent upstream: method, base path + normalized path + query, the client's
/// fields minus hop-by-hop, identity names (every spelling) and the ones rewritten here
/// (`Host`, `X-Forwarded-*`, `X-Request-Id`, the trace context), then those rewritten fields.
final class RequestRewriter {
    /// What a request drops, by which credentials it carries that the sidecar removes. A
    /// class: choosing one per request then retains one reference, not four.
    private final class DropSets {
        let plain, cookie, authorization, both: FieldForwarding

        init(_ dropped: [String]) {
            plain = FieldForwarding(dropping: dropped)
            cookie = FieldForwarding(dropping: dropped + ["cookie"])
            authorization = FieldForwarding(dropping: dropped + ["authorization"])
            both = FieldForwarding(dropping: dropped + ["cookie", "authorization"])
        }

        func set(strippingCookie: Bool, strippingAuthorization: Bool) -> FieldForwarding {
            switch (strippingCookie, strippingAuthorization) {
            case (false, false): plain
            case (true, false): cookie
            case (false, true): authorization
            case (true, true): both
            }
        }
    }

    /// Forwarding and routing fields an upstream framework may believe (Rack's `Forwarded`,
    /// IIS's `X-Original-URL`, Spring's `X-Forwarded-Prefix`, …): only a trusted proxy in
    /// front may set them (`trusted_proxies`).
    static let forwardingFields = [
        "forwarded", "x-real-ip", "x-original-url", "x-rewrite-url", "x-forwarded-port", "x-forwarded-prefix",
        "x-forwarded-server", "x-forwarded-scheme", "x-forwarded-ssl", "x-host", "x-client-ip", "true-client-ip",
    ]
    private let fromTrustedPeer: DropSets
    private let fromOtherPeer: DropSets
    /// What a request's trailer fields may not carry besides `TrailerFields`' own list:
    /// everything any request's head is stripped of, whoever sent it.
    let trailerForwarding: FieldForwarding
    private let auth: AuthSettings?
    /// `set_headers` of every site's rules, numbered as `Route` numbers them (both compile the
    /// same configuration).
    private let ruleHeaders: RuleHeaders
    private let trustedProxies: [CIDR]
    // Copied once into memory this object owns: written into every request without the
    // retain and release an array property costs on each read.
    /// Per upstream (as `Worker.upstreams` numbers them): the `Host` it is sent and its base path.
    private let targets: UnsafeMutableBufferPointer<(host: UnsafeRawBufferPointer, basePath: UnsafeRawBufferPointer)>
    private let preserveHost: Bool
    private let scheme: UnsafeRawBufferPointer

    init(options: ProxyOptions) {
        ruleHeaders = RuleHeaders(options.config)
        let dropped = options.strippedHeaders + ruleHeaders.names + [
            "host", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-request-id",
            "traceparent", "tracestate",
        ]
        fromTrustedPeer = DropSets(dropped)
        fromOtherPeer = DropSets(dropped + Self.forwardingFields)
        trailerForwarding = fromOtherPeer.both
        auth = options.auth
        trustedProxies = options.config.trustedProxies
        let upstreams = options.allUpstreams
        targets = .allocate(capacity: upstreams.count)
        for (index, target) in upstreams.enumerated() {
            switch target.upstream {
            case .http(let host, let port, let base), .https(let host, let port, let base):
                let bracketed = host.contains(":") ? "[\(host)]" : host
                let defaultPort: UInt16 = target.upstream.isTLS ? 443 : 80
                targets[index] = (Self.own(port == defaultPort ? bracketed : "\(bracketed):\(port)"), Self.own(base))
            case .unix:
                targets[index] = (Self.own("localhost"), Self.own(""))
            }
        }
        preserveHost = options.config.preserveHost
        scheme = Self.own(options.scheme)
    }

    deinit {
        for target in targets {
            target.host.deallocate()
            target.basePath.deallocate()
        }
        targets.deallocate()
        scheme.deallocate()
    }

    private static func own(_ text: String) -> UnsafeRawBufferPointer {
        let bytes = Array(text.utf8)
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        memory.copyBytes(from: bytes)
        return UnsafeRawBufferPointer(rebasing: memory[0..<bytes.count])
    }

    func isTrusted(_ peer: SocketAddress) -> Bool {
        isTrusted(address: peer.ipBytes)
    }

    /// `address`: 4 or 16 bytes, an IPv4-mapped IPv6 address already unmapped.
    func isTrusted(address: [UInt8]) -> Bool {
        guard !trustedProxies.isEmpty, let address = IPAddress(bytes: address) else { return false }
        return trustedProxies.contains { $0.contains(address) }
    }

    /// Writes the upstream head into `buffer` (one copy, straight into its free space).
    /// `normalizedPath` is what the access decision was made on; `requestId` the id to send;
    /// `trace` the request's trace (its `traceparent` names the sidecar's span); `ruleHeaders`
    /// the deciding rule's `set_headers`. False only if libevent could not allocate the space.
    func write(
        _ head: HTTPRequestHead, _ view: HeadView, upstream: Int, ruleHeaders group: RuleHeaders.Group = 0,
        normalizedPath: [UInt8], peerText: [UInt8],
        peerTrusted: Bool, requestId: [UInt8], trace: TraceContext, identity: RequestIdentity, to buffer: ByteQueue
    ) -> Bool {
        let (upstreamHost, basePath) = targets[min(upstream, targets.count - 1)]
        // Every byte of the client's head is written at most twice (its Host value goes to
        // Host and X-Forwarded-Host); the rest is what this sidecar adds.
        // Summed in steps: as one expression it took the type checker most of a second.
        var bound = 2 * view.bytes.count + basePath.count + normalizedPath.count
        bound += upstreamHost.count + peerText.count + scheme.count
        bound += requestId.count + 256 + TraceContext.traceparentFieldLength
        if trace.forwardsTracestate { bound += TraceContext.maxTracestateBytes + 16 }
        if auth != nil { bound += ForwardedIdentity.bound(identity) }
        let added = ruleHeaders.block(group)
        bound += added.count
        guard var reserved = ReservedHead(in: buffer, bound: bound) else { return false }
        write(head, view, upstreamHost: upstreamHost, basePath: basePath, added: added, normalizedPath: normalizedPath,
              peerText: peerText, peerTrusted: peerTrusted, requestId: requestId, trace: trace, identity: identity,
              into: &reserved.out)
        return reserved.commit()
    }

    private func write(
        _ head: HTTPRequestHead, _ view: HeadView, upstreamHost: UnsafeRawBufferPointer, basePath: UnsafeRawBufferPointer,
        added: UnsafeRawBufferPointer, normalizedPath: [UInt8], peerText: [UInt8],
        peerTrusted: Bool, requestId: [UInt8], trace: TraceContext, identity: RequestIdentity,
        into out: inout HeadBuffer
    ) {
        func bytes(_ range: ByteRange) -> UnsafeRawBufferPointer { view[range] }
        out.append(bytes(head.methodRange))
        out.append(" ")
        out.append(basePath)
        if head.targetForm == .asterisk && basePath.isEmpty {
            out.append("*")
        } else {
            out.append(normalizedPath)
        }
        if let query = head.query {
            out.append("?")
            out.append(bytes(query))
        }
        out.append(" HTTP/1.1\r\n")

        let drop = peerTrusted
            ? fromTrustedPeer.set(strippingCookie: identity.stripCookie, strippingAuthorization: identity.stripBearer)
            : fromOtherPeer.set(strippingCookie: identity.stripCookie, strippingAuthorization: identity.stripBearer)
        // Only a WebSocket upgrade passes; any other is forwarded as a plain request (its Upgrade,
        // Connection and HTTP2-Settings are hop-by-hop and dropped).
        out.appendFields(
            of: view, connection: head.connection, forwarding: drop,
            keepUpgrade: head.connection.upgrade && head.upgradesToWebSocket)
        if let auth {
            ForwardedIdentity.append(view, identity: identity, settings: auth, into: &out)
        }
        if !added.isEmpty { out.append(added) }
        if head.framing == .chunked { out.appendFraming(.chunked) }

        // RFC 9112 §3.2.2: an absolute-form target's authority takes the place of Host.
        let clientHost = head.authority ?? head.host
        out.append("Host: ")
        if preserveHost, let clientHost, !clientHost.isEmpty {
            out.append(bytes(clientHost))
        } else {
            out.append(upstreamHost)
        }

        out.append("\r\nX-Forwarded-For: ")
        if peerTrusted {
            for field in view.fields where !field.value.isEmpty && view.name(of: field, is: "x-forwarded-for") {
                out.append(bytes(field.value))
                out.append(", ")
            }
        }
        out.append(peerText)

        out.append("\r\nX-Forwarded-Proto: ")
        if peerTrusted, let proto = view.firstValue("x-forwarded-proto"), !proto.isEmpty {
            out.append(bytes(proto))
        } else {
            out.append(scheme)
        }

        if peerTrusted, let forwarded = view.firstValue("x-forwarded-host"), !forwarded.isEmpty {
            out.append("\r\nX-Forwarded-Host: ")
            out.append(bytes(forwarded))
        } else if let clientHost, !clientHost.isEmpty {
            out.append("\r\nX-Forwarded-Host: ")
            out.append(bytes(clientHost))
        }

        out.append("\r\nX-Request-Id: ")
        out.append(requestId)
        out.append(count: TraceContext.traceparentFieldLength) { trace.writeTraceparentField(to: $0) }
        if trace.forwardsTracestate { appendTracestate(of: view, into: &out) }
        out.append("\r\n\r\n")
    }

    /// The client's `tracestate` fields as one (joined by commas, as the specification
    /// allows), already found to fit `TraceContext.maxTracestateBytes`.
    private func appendTracestate(of view: HeadView, into out: inout HeadBuffer) {
        var first = true
        for field in view.fields where !field.value.isEmpty && view.name(of: field, is: "tracestate") {
            out.append(first ? "\r\ntracestate: " : ",")
            out.append(view[field.value])
            first = false
        }
    }
}

/// Builds the head sent to the client from the upstream's response head.
enum ResponseRewriter {
    /// Writes the client's head into `buffer`; `chunked`: the body is (re-)chunked for the
    /// client. False only if libevent could not allocate the space.
    static func write(
        _ head: HTTPResponseHead, chunked: Bool, keepAlive: Bool, clientVersion: HTTPVersion,
        setCookie: [UInt8]? = nil, to buffer: ByteQueue
    ) -> Bool {
        head.withView { view in
            let bound = view.bytes.count + (setCookie?.count ?? 0) + 128
            guard var reserved = ReservedHead(in: buffer, bound: bound) else { return false }
            write(head, view, chunked: chunked, keepAlive: keepAlive, clientVersion: clientVersion,
                  setCookie: setCookie, into: &reserved.out)
            return reserved.commit()
        }
    }

    private static func write(
        _ head: HTTPResponseHead, _ view: HeadView, chunked: Bool, keepAlive: Bool, clientVersion: HTTPVersion,
        setCookie: [UInt8]?, into out: inout HeadBuffer
    ) {
        out.appendStatusLine(of: head, view)
        out.appendFields(of: view, connection: head.connection, forwarding: .hopByHopOnly, keepUpgrade: head.status == 101)
        guard head.status >= 200 else {
            out.append("\r\n")
            return
        }
        if chunked { out.appendFraming(.chunked) }
        if let setCookie {  // a re-sealed session
            out.append("Set-Cookie: ")
            out.append(setCookie)
            out.append("\r\n")
        }
        if !keepAlive {
            out.append("Connection: close\r\n")
        } else if clientVersion == .http10 {
            out.append("Connection: keep-alive\r\n")
        }
        out.append("\r\n")
    }
}
