import SidecarHTTP

extension FuzzChecks {
    /// `traceparent` values: whatever parses has non-zero ids and writes back as a value that
    /// parses to the same fields — byte for byte the input for version 00, whose only form
    /// is the one written; a higher version keeps only its sampled flag. The same bytes in a
    /// request head are read the same way by the head's one-pass trace lookup.
    static func traceparent(_ input: UnsafeRawBufferPointer) {
        guard let parsed = TraceParent.parse(input) else {
            inHead(input, expecting: nil)
            return
        }
        check(parsed.traceIdHigh | parsed.traceIdLow != 0 && parsed.parentId != 0, "ids are not zero")
        check(input[0] != UInt8(ascii: "0") || input[1] != UInt8(ascii: "0") || input.count == TraceContext.traceparentLength,
              "version 00 is exactly 55 bytes")
        var trace = TraceContext.starting(traceIdHigh: parsed.traceIdHigh, traceIdLow: parsed.traceIdLow,
                                          spanId: parsed.parentId)
        trace.flags = parsed.flags
        var written = [UInt8](repeating: 0, count: TraceContext.traceparentLength)
        written.withUnsafeMutableBytes { trace.writeTraceparent(to: $0.baseAddress!) }
        let again = written.withUnsafeBytes { TraceParent.parse($0) }
        check(again == parsed, "written traceparent parses to the same fields")
        check(parsed.flags & ~TraceContext.sampled == 0, "only the sampled flag is kept")
        if input[0] == UInt8(ascii: "0") && input[1] == UInt8(ascii: "0") {
            check(written.prefix(53).elementsEqual(input.prefix(53)), "version 00 round-trips but for its flags")
        }
        inHead(input, expecting: parsed)
    }

    /// The value as the one `traceparent` field of a request head, when it can be one (no
    /// line breaks, no leading or trailing blanks the parser would trim).
    private static func inHead(_ input: UnsafeRawBufferPointer, expecting parsed: TraceParent?) {
        guard input.count <= 512, !input.isEmpty,
              input.allSatisfy({ $0 >= 0x21 && $0 < 0x7f }) else { return }
        let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\ntraceparent: ".utf8) + Array(input) + Array("\r\n\r\n".utf8)
        guard let head = try? HTTPRequestHead.parse(bytes, limits: limits) else { return }
        let incoming = head.withView { $0.incomingTrace() }
        check(incoming.parent == parsed, "a head's traceparent reads as the value alone")
    }
}
