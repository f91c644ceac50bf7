import SidecarEvent
import SidecarHTTP

/// Where a PROXY header's bytes come from: peeked from the socket, then taken exactly
/// (`Stream`; the tests feed it their own).
protocol PreambleSource {
    func peekPreamble(into buffer: UnsafeMutableRawBufferPointer) -> PreambleRead
    func consumePreamble(_ count: Int) -> Bool
}

extension Stream: PreambleSource {}

/// The PROXY protocol header in front of a connection (`proxy_protocol`): read from the socket
/// before anything else (before TLS too), exactly its own bytes, so that what the client sent
/// behind it — a request, a ClientHello — stays in the socket for the stream. The worker has
/// already refused peers outside `trusted_proxies`.
struct ProxyHeaderReader {
    /// The header's bytes taken from the socket so far (while it is incomplete).
    private var held: [UInt8] = []

    enum Outcome: Equatable {
        /// Every byte seen so far belongs to the header; the rest is still to come.
        case waiting
        /// The peer closed, or the socket failed, before the header was whole.
        case ended
        case invalid(String)
        /// The whole header, taken from the socket and nothing after it.
        case header(ProxyProtocolHeader)
    }

    /// Looks at what the socket has and takes what belongs to the header.
    mutating func read(from source: some PreambleSource) -> Outcome {
        let heldCount = held.count
        let outcome = withUnsafeTemporaryAllocation(byteCount: ProxyProtocolHeader.maxBinaryLength, alignment: 1) {
            buffer -> Outcome in
            held.withUnsafeBytes { buffer.copyMemory(from: $0) }
            let read = source.peekPreamble(into: UnsafeMutableRawBufferPointer(rebasing: buffer[heldCount...]))
            guard case .bytes(let count) = read else {
                return read == .nothing ? .waiting : .ended
            }
            let seen = UnsafeRawBufferPointer(rebasing: buffer[..<(heldCount + count)])
            switch ProxyProtocolHeader.parse(seen) {
            case .needMore:
                guard seen.count < buffer.count, source.consumePreamble(count) else {
                    return .invalid("PROXY header too long")
                }
                held = Array(seen)
                return .waiting
            case .header(let header):
                guard source.consumePreamble(header.length - heldCount) else { return .ended }
                return .header(header)
            case .invalid(let reason):
                return .invalid(reason)
            }
        }
        if case .header = outcome { held = [] }
        return outcome
    }
}
