import CEvent
import SidecarEvent
import SidecarHTTP

/// Builds the head sent upstream: method, base path + normalized path + query, the client's
/// fields minus hop-by-hop, identity names (every spelling) and the ones rewritten here
/// (`Host`, `X-Forwarded-*`, `X-Request-Id`), then those rewritten fields.
final class RequestRewriter {
    private let dropping: HeaderNameSet
    /// `dropping` plus Cookie / Authorization / both, for requests whose session cookie or
    /// bearer token is rewritten (`ForwardedIdentity`).
    private let droppingCookie: HeaderNameSet
    private let droppingAuthorization: HeaderNameSet
    private let droppingBoth: HeaderNameSet
    private let auth: AuthSettings?
    private let trustedProxies: [AddressRange]
    private let upstreamHost: [UInt8]
    private let basePath: [UInt8]
    private let preserveHost: Bool
    private let scheme: [UInt8]

    init(options: ProxyOptions) {
        let dropped = options.strippedHeaders + [
            "host", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-request-id",
        ]
        dropping = HeaderNameSet(dropped)
        droppingCookie = HeaderNameSet(dropped + ["cookie"])
        droppingAuthorization = HeaderNameSet(dropped + ["authorization"])
        droppingBoth = HeaderNameSet(dropped + ["cookie", "authorization"])
        auth = options.auth
        trustedProxies = options.trustedProxies.compactMap(AddressRange.init)
        switch options.upstream {
        case .tcp(let host, let port, let base):
            let bracketed = host.contains(":") ? "[\(host)]" : host
            upstreamHost = Array((port == 80 ? bracketed : "\(bracketed):\(port)").utf8)
            basePath = Array(base.utf8)
        case .unix:
            upstreamHost = Array("localhost".utf8)
            basePath = []
        }
        preserveHost = options.preserveHost
        scheme = Array(options.scheme.utf8)
    }

    func isTrusted(_ peer: SocketAddress) -> Bool {
        guard !trustedProxies.isEmpty else { return false }
        let bytes = peer.ipBytes
        return trustedProxies.contains { $0.contains(bytes) }
    }

    /// Appends the upstream head to `buffer`. `normalizedPath` is what the access decision
    /// was made on; `requestId` the id to send. `fields`/`line` are the worker's scratch.
    func write(
        _ head: HTTPRequestHead, normalizedPath: [UInt8], peerText: [UInt8], peerTrusted: Bool,
        requestId: [UInt8], identity: RequestIdentity, line: inout ByteBuilder, fields: inout HeadWriter,
        to buffer: OpaquePointer
    ) {
        // One borrow of the head's bytes: `head.bytes(_:)` slices would retain it each time.
        head.storage.withUnsafeBytes { buf in
            func bytes(_ range: ByteRange) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: buf[range.range])
            }
            line.reset()
            line.append(bytes(head.methodRange))
            line.append(" ")
            line.append(basePath)
            if head.targetForm == .asterisk && basePath.isEmpty {
                line.append("*")
            } else {
                line.append(normalizedPath)
            }
            if let query = head.query {
                line.append("?")
                line.append(bytes(query))
            }
            line.append(" HTTP/1.1\r\n")
            line.write(to: buffer)

            fields.reset()
            let drop: HeaderNameSet
            switch (identity.stripCookie, identity.bearer != nil) {
            case (false, false): drop = dropping
            case (true, false): drop = droppingCookie
            case (false, true): drop = droppingAuthorization
            case (true, true): drop = droppingBoth
            }
            fields.appendFields(of: head, dropping: drop, keepUpgrade: head.connection.upgrade)
            if let auth {
                ForwardedIdentity.append(head, identity: identity, settings: auth, into: &fields)
            }
            if head.framing == .chunked { fields.appendFraming(.chunked) }
            fields.write(to: buffer)

            line.reset()
            // RFC 9112 §3.2.2: an absolute-form target's authority takes the place of Host.
            let clientHost = head.authority ?? head.host
            line.append("Host: ")
            if preserveHost, let clientHost, !clientHost.isEmpty {
                line.append(bytes(clientHost))
            } else {
                line.append(upstreamHost)
            }

            line.append("\r\nX-Forwarded-For: ")
            if peerTrusted {
                for value in head.values("x-forwarded-for") where !value.isEmpty {
                    line.append(bytes(value))
                    line.append(", ")
                }
            }
            line.append(peerText)

            line.append("\r\nX-Forwarded-Proto: ")
            if peerTrusted, let proto = head.firstValue("x-forwarded-proto"), !proto.isEmpty {
                line.append(bytes(proto))
            } else {
                line.append(scheme)
            }

            if peerTrusted, let forwarded = head.firstValue("x-forwarded-host"), !forwarded.isEmpty {
                line.append("\r\nX-Forwarded-Host: ")
                line.append(bytes(forwarded))
            } else if let clientHost, !clientHost.isEmpty {
                line.append("\r\nX-Forwarded-Host: ")
                line.append(bytes(clientHost))
            }

            line.append("\r\nX-Request-Id: ")
            line.append(requestId)
            line.append("\r\n\r\n")
            line.write(to: buffer)
        }
    }
}

/// Builds the head sent to the client from the upstream's response head.
enum ResponseRewriter {
    /// `chunked`: the body is (re-)chunked for the client.
    static func write(
        _ head: HTTPResponseHead, chunked: Bool, keepAlive: Bool, clientVersion: HTTPVersion,
        setCookie: [UInt8]? = nil, into out: inout HeadWriter
    ) {
        out.appendStatusLine(of: head)
        out.appendFields(of: head, dropping: .empty, keepUpgrade: head.status == 101)
        guard head.status >= 200 else {
            out.finish()
            return
        }
        if chunked { out.appendFraming(.chunked) }
        if let setCookie {  // a re-sealed session
            let name: StaticString = "Set-Cookie"
            setCookie.withUnsafeBytes { value in
                try? out.appendField(name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: value)
            }
        }
        if !keepAlive {
            out.append("Connection: close\r\n")
        } else if clientVersion == .http10 {
            out.append("Connection: keep-alive\r\n")
        }
        out.finish()
    }
}

extension HeadWriter {
    func write(to buffer: OpaquePointer) {
        bytes.withUnsafeBytes { _ = evbuffer_add(buffer, $0.baseAddress, $0.count) }
    }
}
