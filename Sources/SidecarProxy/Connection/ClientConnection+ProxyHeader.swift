import SidecarEvent
import SidecarHTTP

/// The PROXY protocol header in front of each connection (`proxy_protocol`): read from the
/// socket before anything else (before TLS too), exactly its own bytes, so that what the
/// client sent behind it — a request, a ClientHello — stays in the socket for the stream.
/// The worker has already refused peers outside `trusted_proxies`.
extension ClientConnection {
    func streamPreambleReadable(_ stream: Stream) {
        let held = proxyHeaderBytes.count
        let outcome = withUnsafeTemporaryAllocation(byteCount: ProxyProtocolHeader.maxBinaryLength, alignment: 1) {
            buffer -> ProxyHeaderOutcome in
            proxyHeaderBytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            let read = stream.peekPreamble(into: UnsafeMutableRawBufferPointer(rebasing: buffer[held...]))
            guard case .bytes(let count) = read else {
                return read == .nothing ? .waiting : .ended
            }
            let seen = UnsafeRawBufferPointer(rebasing: buffer[..<(held + count)])
            switch ProxyProtocolHeader.parse(seen) {
            case .needMore:
                // Every byte seen belongs to the header: take them and wait for the rest.
                guard seen.count < buffer.count, stream.consumePreamble(count) else {
                    return .invalid("PROXY header too long")
                }
                proxyHeaderBytes = Array(seen)
                return .waiting
            case .header(let header):
                guard stream.consumePreamble(header.length - held) else { return .ended }
                return .header(header)
            case .invalid(let reason):
                return .invalid(reason)
            }
        }
        switch outcome {
        case .waiting:
            break
        case .ended:
            refuseProxyHeader(.closed, "the peer closed the connection")
        case .invalid(let reason):
            refuseProxyHeader(.invalid, reason)
        case .header(let header):
            proxyHeaderBytes = []
            if case .client(let address, _) = header.source { adoptClient(address) } else { distrustUnnamedClient() }
            stream.endPreamble()
            perform(machine.proxyHeaderRead())
        }
    }

    /// The header's source is the client from now on; it is trusted only if it is itself a
    /// listed proxy (the balancer is, the browser behind it normally is not).
    private func adoptClient(_ address: [UInt8]) {
        let unmapped = Self.isIPv4Mapped(address) ? Array(address[12...]) : address
        guard let text = ProxyProtocolHeader.text(of: unmapped) else { return distrustUnnamedClient() }
        peerText = Array(text.utf8)
        peerTrusted = context.settings.rewriter.isTrusted(address: unmapped)
    }

    /// `UNKNOWN`, `LOCAL`, a unix or unspecified family: the balancer names no client, yet
    /// whoever is behind it may still be anyone (a relay, a misrouted client), and the
    /// balancer's trust is its own, not its client's. The address stays the balancer's (the
    /// access line, the sign-in budget); what the client says of itself in forwarding fields
    /// is stripped, as from any untrusted peer.
    private func distrustUnnamedClient() {
        peerTrusted = false
    }

    /// `::ffff:a.b.c.d`: written as IPv4, as accepted peers are (`SocketAddress.ipBytes`).
    private static func isIPv4Mapped(_ address: [UInt8]) -> Bool {
        address.count == 16 && address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xff && address[11] == 0xff
    }

    func refuseProxyHeader(_ reason: ProxyHeaderRefusal, _ detail: String) {
        context.log.refusedProxyHeader(reason, peer: String(decoding: peerText, as: UTF8.self), detail: detail)
        close()
    }
}

private enum ProxyHeaderOutcome {
    case waiting
    case ended
    case invalid(String)
    case header(ProxyProtocolHeader)
}
