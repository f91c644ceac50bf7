import Glibc
import SidecarEvent
import SidecarHTTP

/// After a 101: bytes flow both ways unchanged until either side closes.
extension ClientConnection {
    // MARK: tunnel (after 101)

    func startTunnel(_ head: HTTPResponseHead) {
        exchange.response = UpstreamResponse(keepAlive: false)
        exchange.status = 101
        writeResponseHead(head, chunked: false)
        logExchange()
        perform(machine.tunnelStarted())
        exchange.requestRelay = nil
        tunnelUpstreamToClient()
        tunnelClientToUpstream()
    }

    func tunnelClientToUpstream() {
        guard let upstream = exchange.upstream else { return }
        if stream.pendingInput > 0 { _ = stream.input.move(to: upstream.stream.output) }
        if upstream.stream.flush() != 0 {
            close()
            return
        }
        updateClientReading()
    }

    func tunnelUpstreamToClient() {
        guard let upstream = exchange.upstream else { return }
        if upstream.stream.pendingInput > 0 { _ = upstream.stream.input.move(to: stream.output) }
        if stream.flush() != 0 {
            close()
            return
        }
        if stream.pendingOutput > context.settings.holdLimit { upstream.stream.pauseReading() }
    }
}
