import SidecarHTTP
import SidecarHTTP2

/// HTTP/2 frames after the client preface, through a server session with every bound on:
/// nothing traps, and every request head the session builds is one an HTTP/1.1 reader takes
/// the same way: written out as HTTP/1.1 text and parsed by the strict parser, it gives the
/// same method, target, fields, Host and framing — one request line, one Host, origin-form
/// path — so no field list can carry a field the two protocols' paths would read differently.
final class H2FuzzChecks: H2SessionDelegate {
    static let limits = HTTPHeadLimits(maxHeadBytes: 16 * 1024 + 512, maxFields: 200)
    let session: H2Session

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

    func h2Request(_ stream: Int32, _ outcome: consuming H2RequestHead.Outcome, endStream: Bool) {
        if case .request(let head) = outcome { Self.checkAgainstParser(head, bodyFollows: !endStream) }
        session.nextResponseHead.appendStatus(200)
        _ = session.respond(stream, hasBody: true)
    }

    func h2SpareHead() -> HeadArrays { HeadArrays() }

    static func checkAgainstParser(_ head: HTTPRequestHead, bodyFollows: Bool) {
        var text: [UInt8] = []
        head.withView { view in
            text += view[head.methodRange]
            text += Array(" ".utf8) + view[head.target] + Array(" HTTP/1.1\r\n".utf8)
            for field in view.fields { text += view[field.name] + Array(": ".utf8) + view[field.value] + Array("\r\n".utf8) }
        }
        let addsChunked = head.framing == .chunked && head.firstValue("content-length") == nil
        FuzzChecks.check(addsChunked == (bodyFollows && head.framing == .chunked), "chunked framing only for a body")
        if addsChunked { text += Array("transfer-encoding: chunked\r\n".utf8) }
        text += Array("\r\n".utf8)
        let parsed: HTTPRequestHead?
        do {
            parsed = try HTTPRequestHead.parse(text, limits: limits)
        } catch {
            FuzzChecks.check(false, "a built head parses as HTTP/1.1")
            return
        }
        guard let parsed else { return FuzzChecks.check(false, "a built head is complete") }
        FuzzChecks.check(parsed.method == head.method && parsed.framing == head.framing, "same method and framing")
        FuzzChecks.check(parsed.bytes(parsed.target).elementsEqual(head.bytes(head.target)), "same target")
        FuzzChecks.check(parsed.host.map(parsed.bytes) == head.host.map(head.bytes), "same host")
        FuzzChecks.check(parsed.fields.count == head.fields.count + (addsChunked ? 1 : 0), "same fields")
        for (a, b) in zip(parsed.fields, head.fields) {
            FuzzChecks.check(parsed.bytes(a.name).elementsEqual(head.bytes(b.name))
                && parsed.bytes(a.value).elementsEqual(head.bytes(b.value)), "same field")
        }
        head.withView { view in
            FuzzChecks.check(view.fields.filter { view.name(of: $0, is: "host") }.count == 1, "one Host")
            FuzzChecks.check(view[head.path].first == UInt8(ascii: "/"), "origin-form path")
        }
    }

    func h2RequestData(_ stream: Int32, _ bytes: UnsafeRawBufferPointer) { session.consume(stream, bytes.count) }
    func h2RequestTrailer(_ stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {}
    func h2RequestEnded(_ stream: Int32) {}
    func h2StreamClosed(_ stream: Int32, errorCode: UInt32) {}
    func h2ResponseBody(_ stream: Int32, into buffer: UnsafeMutableRawBufferPointer) -> H2Session.Body {
        .bytes(min(3, buffer.count), end: true)
    }
    func h2Refused(_ reason: H2Session.Refusal) {}
}
