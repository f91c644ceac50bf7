import SidecarHTTP

/// The invariants checked on every input. A violation traps, which libFuzzer reports.
enum FuzzChecks {
    static let limits = HTTPHeadLimits(maxHeadBytes: 4096, maxFields: 32)
    static let globs = PathGlobSet(["/public/**", "/*.css", "/a*b/**/c"])
    static let redirects = RedirectPolicy(publicOrigin: "https://app.example.com", allowedHosts: ["docs.example.com:8443"])

    static func run(_ input: UnsafeRawBufferPointer) {
        requestHead(input)
        responseHead(input)
        chunked(input)
        paths(input)
        PathFuzzChecks.run(input)
        redisReply(input)
        traceparent(input)
        H2FuzzChecks.run(input)
    }

    static func check(_ condition: Bool, _ message: StaticString) {
        if !condition { fatalError("invariant failed: \(message)") }
    }

    static func rangesInBounds(_ head: some HTTPHead) {
        let n = head.storage.count
        for f in head.fields {
            check(f.name.count > 0 && f.name.start <= f.name.end && Int(f.name.end) <= n, "name range")
            check(f.value.start <= f.value.end && Int(f.value.end) <= n, "value range")
        }
    }

    static func requestHead(_ input: UnsafeRawBufferPointer) {
        let head: HTTPRequestHead
        do {
            guard let h = try HTTPRequestHead.parse(input, limits: limits) else {
                check(input.count < limits.maxHeadBytes, "nil only under the limit")
                return
            }
            head = h
        } catch {
            return
        }
        check(head.headLength <= input.count && head.headLength <= limits.maxHeadBytes, "head length")
        check(head.storage.elementsEqual(input[0..<head.headLength]), "storage is the input prefix")
        rangesInBounds(head)
        check(Int(head.target.end) <= head.headLength && Int(head.path.end) <= Int(head.target.end), "target ranges")
        guard head.version == .http11 else { return }
        // Re-serialized, the head parses again to the same framing, method and path.
        var writer = HeadWriter()
        do { try writer.appendRequestLine(for: head) } catch { return }
        writer.appendFields(of: head, forwarding: .hopByHopOnly, keepUpgrade: head.connection.upgrade)
        if head.framing == .chunked { writer.appendFraming(.chunked) }
        writer.finish()
        fieldsFitTheirBound(head)
        let again: HTTPRequestHead?
        do { again = try HTTPRequestHead.parse(writer.bytes, limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxFields: 1000)) } catch {
            fatalError("re-serialized request refused: \(error)")
        }
        guard let again else { fatalError("re-serialized request incomplete") }
        check(again.framing == head.framing, "same framing")
        check(again.method == head.method, "same method")
        check(again.connection.upgrade == head.connection.upgrade, "same upgrade")
        if again.targetForm == .origin {
            let path = again.string(again.path)
            check((try? PathNormalizer.normalize(path)) == path, "forwarded path is normalized")
        }
    }

    /// The proxy reserves the head's size + 21 bytes for its forwarded fields
    /// (`HeadBuffer.appendFields`); they fit, and equal what `HeadWriter` writes.
    static func fieldsFitTheirBound(_ head: some HTTPHead & Sendable) {
        let keepUpgrade = (head as? HTTPRequestHead)?.connection.upgrade ?? (head as? HTTPResponseHead)?.connection.upgrade ?? false
        let capacity = head.storage.count + 21
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer { memory.deallocate() }
        var buffer = HeadBuffer(memory.baseAddress!, capacity: capacity)
        head.withView {
            buffer.appendFields(of: $0, connection: head.connection, forwarding: .hopByHopOnly, keepUpgrade: keepUpgrade)
        }  // traps if over
        var writer = HeadWriter()
        writer.appendFields(of: head, forwarding: .hopByHopOnly, keepUpgrade: keepUpgrade)
        check(Array(buffer.written) == writer.bytes, "HeadBuffer and HeadWriter agree")
    }

    static func responseHead(_ input: UnsafeRawBufferPointer) {
        let method: HTTPMethod = input.first.map { $0 & 1 == 0 ? .get : .head } ?? .get
        let head: HTTPResponseHead
        do {
            guard let h = try HTTPResponseHead.parse(input, requestMethod: method, limits: limits) else { return }
            head = h
        } catch {
            return
        }
        rangesInBounds(head)
        check(head.status >= 100 && head.status <= 999, "status")
        if head.framing == .untilClose { check(!head.connection.keepAlive, "until close is not reusable") }
        fieldsFitTheirBound(head)
        var writer = HeadWriter()
        writer.appendStatusLine(of: head)
        writer.appendFields(of: head, forwarding: .hopByHopOnly, keepUpgrade: head.connection.upgrade)
        if head.framing == .chunked { writer.appendFraming(.chunked) }
        writer.finish()
        do {
            let again = try HTTPResponseHead.parse(writer.bytes, requestMethod: method, limits: HTTPHeadLimits(maxHeadBytes: 1 << 20, maxFields: 1000))
            check(again?.framing == head.framing, "same response framing")
            check(again?.status == head.status, "same status")
        } catch {
            fatalError("re-serialized response refused: \(error)")
        }
    }

    /// Decoding in one piece and in two pieces split at a data-derived point agree.
    static func chunked(_ input: UnsafeRawBufferPointer) {
        let whole = decode([input])
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        let split = decode([UnsafeRawBufferPointer(rebasing: input[..<cut]), UnsafeRawBufferPointer(rebasing: input[cut...])])
        check(whole == split, "split-independent chunked decoding")
        if let end = whole.end { check(end <= input.count, "end within input") }
        if whole.failed { check(whole.end == nil, "no end after an error") }
    }

    struct Decoded: Equatable {
        var body: [UInt8] = []
        var trailers: [UInt8] = []
        var end: Int?
        var failed = false
    }

    static func decode(_ pieces: [UnsafeRawBufferPointer]) -> Decoded {
        var decoder = ChunkedDecoder(limits: .init(maxExtensionBytes: 64, maxTrailerBytes: 128), reportingTrailers: true)
        var out = Decoded()
        var offset = 0
        for piece in pieces {
            var index = 0
            loop: while true {
                do {
                    switch try decoder.next(piece, index: &index) {
                    case .data(let r):
                        check(r.lowerBound >= 0 && r.upperBound <= piece.count && !r.isEmpty, "data range")
                        out.body.append(contentsOf: piece[r])
                    case .trailer(let r):
                        check(r.lowerBound >= 0 && r.upperBound <= piece.count && !r.isEmpty, "trailer range")
                        out.trailers.append(contentsOf: piece[r])
                    case .needMoreData:
                        check(index == piece.count, "need more only when consumed")
                        break loop
                    case .end:
                        check(decoder.isComplete, "complete at end")
                        checkTrailerSection(out.trailers)
                        out.end = offset + index
                        return out
                    }
                } catch {
                    // Trailer bytes yielded before the error mean nothing: the message is refused.
                    out.failed = true
                    out.trailers = []
                    return out
                }
            }
            offset += piece.count
        }
        return out
    }

    /// A reported trailer section is whole `name: value` CRLF lines, each passing the field
    /// grammar: what a proxy writes of it can be no more than lines it validated.
    static func checkTrailerSection(_ section: [UInt8]) {
        check(section.isEmpty || section.suffix(2) == [0x0D, 0x0A], "trailer section ends a line")
        var lines = 0
        section.withUnsafeBytes { raw in
            RenderedFields.forEach(raw) { name, value in
                lines += 1
                check(!name.isEmpty && !name.contains(0x3A), "trailer name")
                check(!value.contains(0x0D) && !value.contains(0x0A), "trailer value")
            }
        }
        check(lines == section.count { $0 == 0x0A }, "one field a line")
    }

    static func paths(_ input: UnsafeRawBufferPointer) {
        var out: [UInt8] = []
        if (try? PathNormalizer.normalize(input, into: &out)) != nil {
            check(out.first == 0x2F, "normalized path is absolute")
            var again: [UInt8] = []
            let ok = out.withUnsafeBytes { (try? PathNormalizer.normalize($0, into: &again)) != nil }
            check(ok && again == out, "normalization is idempotent")
            _ = out.withUnsafeBytes { globs.matches($0) }
        } else {
            check(out.isEmpty, "nothing appended on error")
        }
        let text = String(decoding: input, as: UTF8.self)
        if let safe = redirects.safeTarget(text) {
            check(safe == text, "accepted target is returned unchanged")
            let local = safe.hasPrefix("/") && !safe.hasPrefix("//")
            check(local || safe.lowercased().hasPrefix("https://"), "accepted target is local or https")
        }
    }
}
