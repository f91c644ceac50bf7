import Glibc
import SidecarConfig
import SidecarEvent
import SidecarHTTP

/// HTTP/1.1 POSTs of span batches to the collector, on the exporter thread, over one kept-alive
/// connection (`OTLPConnection`): a batch a second, or hundreds a second under load, would
/// otherwise each pay a TCP connect and, for `https`, a TLS handshake. The connection is kept
/// after an answer that leaves it usable — HTTP/1.1 without `Connection: close`, and no body or
/// one framed by a `Content-Length` of at most 64 KiB, read whole — and closed otherwise. A
/// kept connection the collector has closed since is noticed before it is used; a post over a
/// kept connection that fails before any answer arrives (the collector closed it just then) is
/// made once more over a new one.
final class OTLPSender {
    let endpoint: HTTPURL
    /// The verifying context for an `https` endpoint; unused for `http`.
    let tls: TLSClientContext?
    static let defaultTimeoutMs: Int64 = 2_000
    var timeoutMs: Int64 = OTLPSender.defaultTimeoutMs
    private var kept: OTLPConnection?
    /// Connections opened (tests).
    private(set) var connectionsOpened = 0
    static let maxKeptAnswerBody = 64 * 1024

    init(endpoint: HTTPURL, tls: TLSClientContext? = nil, timeoutMs: Int64 = OTLPSender.defaultTimeoutMs) {
        self.endpoint = endpoint
        self.tls = tls
        self.timeoutMs = timeoutMs
    }

    enum Outcome: Equatable {
        /// A 2xx answer.
        case accepted
        case rejected(status: Int)
        case failed(String)
    }

    func post(_ body: UnsafeRawBufferPointer) -> Outcome {
        let deadline = Self.monotonicMs() + timeoutMs
        var head = "POST \(endpoint.path) HTTP/1.1\r\nHost: \(endpoint.authority)\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
        if let connection = kept, connection.isStale { kept = nil }
        let reused = kept != nil
        switch exchange(head: Array(head.utf8), body: body, deadline: deadline) {
        case .answered(let status): return (200..<300).contains(status) ? .accepted : .rejected(status: status)
        case .failed(let why, let answerBegan):
            // The collector may close a kept connection just as a batch goes out: once more
            // over a fresh one, unless it had begun to answer.
            guard reused, !answerBegan else { return .failed(why.text) }
            switch exchange(head: Array(head.utf8), body: body, deadline: deadline) {
            case .answered(let status): return (200..<300).contains(status) ? .accepted : .rejected(status: status)
            case .failed(let why, _): return .failed(why.text)
            }
        }
    }

    private enum Exchange {
        case answered(status: Int)
        case failed(OTLPConnection.Failure, answerBegan: Bool)
    }

    /// One request over the kept connection, or a new one; keeps the connection when the
    /// answer leaves it usable.
    private func exchange(head: [UInt8], body: UnsafeRawBufferPointer, deadline: Int64) -> Exchange {
        let connection: OTLPConnection
        if let existing = kept {
            connection = existing
            kept = nil
        } else {
            switch OTLPConnection.open(endpoint, tls: tls, deadline: deadline, timeoutMs: timeoutMs) {
            case .success(let opened): connection = opened
            case .failure(let why): return .failed(why, answerBegan: false)
            }
            connectionsOpened += 1
        }
        let sent = head.withUnsafeBytes { connection.send($0, deadline: deadline) }
        if let why = sent ?? connection.send(body, deadline: deadline) { return .failed(why, answerBegan: false) }
        var answer = Answer()
        if let why = answer.read(over: connection, deadline: deadline) {
            return .failed(why, answerBegan: !answer.received.isEmpty)
        }
        if answer.leavesConnectionUsable { kept = connection }
        return .answered(status: answer.status)
    }

    /// The collector's answer: its head parsed strictly, and a small `Content-Length` body read
    /// so the connection can carry the next post.
    private struct Answer {
        var received: [UInt8] = []
        var status = 0
        var leavesConnectionUsable = false

        mutating func read(over connection: OTLPConnection, deadline: Int64) -> OTLPConnection.Failure? {
            var chunk = [UInt8](repeating: 0, count: 4096)
            var head: HTTPResponseHead?
            var wanted = Int.max  // the head's and body's bytes, once the head is known
            while received.count < wanted {
                switch chunk.withUnsafeMutableBytes({ connection.read(into: $0) }) {
                case .moved(let count): received += chunk[..<count]
                case .closed:
                    leavesConnectionUsable = false
                    if head != nil { return nil }  // answered, but the connection is gone
                    return OTLPConnection.Failure(text: "connection closed before an answer")
                case .wait(let event): if let why = connection.wait(for: event, deadline: deadline) { return why }
                case .failed(let why): return why
                }
                if head == nil {
                    switch parseHead() {
                    case .failure(let why): return why
                    case .success(nil):
                        guard received.count < 16 * 1024 else { return OTLPConnection.Failure(text: "answer head too large") }
                    case .success(let parsed?):
                        head = parsed
                        status = parsed.status
                        let headBytes = parsed.storage.count
                        switch parsed.framing {
                        case .none where parsed.connection.keepAlive && !parsed.isInterim:
                            leavesConnectionUsable = received.count == headBytes
                            return nil
                        case .contentLength(let n) where parsed.connection.keepAlive && n <= OTLPSender.maxKeptAnswerBody:
                            wanted = headBytes + Int(n)
                            leavesConnectionUsable = true
                        default:
                            return nil  // the status is all that is needed; the connection is closed
                        }
                    }
                }
            }
            if received.count > wanted { leavesConnectionUsable = false }  // more than was announced
            return nil
        }

        private func parseHead() -> Result<HTTPResponseHead?, OTLPConnection.Failure> {
            do {
                return .success(try HTTPResponseHead.parse(received, requestMethod: .post))
            } catch {
                return .failure(OTLPConnection.Failure(text: "answer is not HTTP"))
            }
        }
    }

    static func monotonicMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
