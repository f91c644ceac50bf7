import SidecarHTTP
import SidecarHTTP2

/// HTTP/2 frames after the client preface, through a server session with every bound on:
/// nothing traps, and every request the session hands on translates to an HTTP/1.1 head that
/// the strict parser either refuses (a 400, as for the same bytes read from a socket) or takes
/// whole — one request line, one Host, origin-form path — so no field list can smuggle a
/// second request or a field the HTTP/1.1 side would read differently.
final class H2FuzzChecks: H2SessionDelegate {
    static let limits = HTTPHeadLimits(maxHeadBytes: 16 * 1024 + 512, maxFields: 200)
    let session: H2Session
    let fields = H2FieldList()

    init() {
        session = H2Session(limits: .init(maxStreams: 8, maxHeaderBytes: 4096, streamWindow: 1024), nowMs: 0)
        session.delegate = self
    }

    static func run(_ input: UnsafeRawBufferPointer) {
        let checks = H2FuzzChecks()
        HTTP2Preface.bytes.withUnsafeBytes { _ = checks.session.receive($0, nowMs: 1) }
        // In two pieces, so that frames split across reads are exercised too.
        let cut = input.count / 3
        if checks.session.receive(UnsafeRawBufferPointer(rebasing: input[..<cut]), nowMs: 2) {
            _ = checks.session.receive(UnsafeRawBufferPointer(rebasing: input[cut...]), nowMs: 3)
        }
        _ = checks.session.send { _ in true }
    }

    func h2Request(_ stream: Int32, head: UnsafeRawBufferPointer, chunked: Bool, endStream: Bool) {
        do {
            guard let parsed = try HTTPRequestHead.parse(head, limits: Self.limits) else {
                FuzzChecks.check(false, "a translated head is complete")
                return
            }
            FuzzChecks.check(parsed.headLength == head.count, "a translated head is exactly one head")
            parsed.withView { view in
                FuzzChecks.check(view.fields.filter { view.name(of: $0, is: "host") }.count == 1, "one Host")
                FuzzChecks.check(view[parsed.path].first == UInt8(ascii: "/"), "origin-form path")
            }
            FuzzChecks.check(chunked == (parsed.framing == .chunked), "chunked framing as announced")
        } catch {
            // Refused as a 400, exactly as the same head read from a socket (a byte outside
            // the strict grammar that HTTP/2's looser field rules let through).
        }
        fields.removeAll()
        fields.appendStatus(200)
        _ = session.respond(stream, fields: fields, hasBody: true)
    }

    func h2RequestData(_ stream: Int32, _ bytes: UnsafeRawBufferPointer) { session.consume(stream, bytes.count) }
    func h2RequestEnded(_ stream: Int32) {}
    func h2StreamClosed(_ stream: Int32, errorCode: UInt32) {}
    func h2ResponseBody(_ stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2Session.Body {
        .bytes(min(3, buffer.count), end: true)
    }
    func h2Refused(_ reason: H2Session.Refusal) {}
}
