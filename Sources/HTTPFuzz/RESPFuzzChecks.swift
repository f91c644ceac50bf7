import SidecarRESP

/// The Redis reply parser (what a hostile or broken Redis could send the sidecar): bounded,
/// and deterministic on prefixes — a proper prefix of a complete reply is never a reply.
extension FuzzChecks {
    static let redisParser: RESPParser = {
        var parser = RESPParser()
        parser.maximumBulkBytes = 1 << 16
        parser.maximumElements = 1 << 10
        return parser
    }()

    static func redisReply(_ input: UnsafeRawBufferPointer) {
        guard case .value(let value, let consumed) = redisParser.parse(input) else { return }
        check(consumed > 0 && consumed <= input.count, "RESP consumed in bounds")
        let exact = UnsafeRawBufferPointer(rebasing: input[0..<consumed])
        check(redisParser.parse(exact) == .value(value, consumed: consumed), "RESP same value without the tail")
        for cut in [consumed - 1, consumed / 2] where cut >= 0 {
            check(redisParser.parse(UnsafeRawBufferPointer(rebasing: input[0..<cut])) == .incomplete, "RESP prefix incomplete")
        }
        if case .array(let items?) = value, let arguments = items.map(\.bytes) as? [[UInt8]] {
            let encoded = RESP.command(arguments)
            check(redisParser.parse(encoded) == .value(.array(arguments.map { .bulk($0) }), consumed: encoded.count),
                  "RESP command encoding round-trips")
        }
    }
}
