import SidecarHTTP

/// Spans as an OTLP/HTTP JSON `ExportTraceServiceRequest` (OTLP's JSON mapping: ids in
/// lower-case hex, 64-bit times as decimal strings, enums as numbers). Runs on the
/// exporter thread only.
struct OTLPEncoder {
    /// `service.name` of the resource the spans come from.
    static let serviceName = "siwa-sidecar"
    let version: String

    /// The whole request body for `spans`, appended to `out`.
    func encode(_ spans: ArraySlice<SpanRecord>, into out: JSONBuffer) {
        out.append("{\"resourceSpans\":[{\"resource\":{\"attributes\":[")
        attribute("service.name", string: Self.serviceName, into: out)
        out.append(",")
        attribute("service.version", string: version, into: out)
        out.append("]},\"scopeSpans\":[{\"scope\":{\"name\":")
        Self.string(Self.serviceName, into: out)
        out.append(",\"version\":")
        Self.string(version, into: out)
        out.append("},\"spans\":[")
        var first = true
        for span in spans {
            if !first { out.append(",") }
            first = false
            encode(span, into: out)
        }
        out.append("]}]}]}")
    }

    private func encode(_ span: SpanRecord, into out: JSONBuffer) {
        out.append("{\"traceId\":\"")
        Self.hex(span.traceIdHigh, into: out)
        Self.hex(span.traceIdLow, into: out)
        out.append("\",\"spanId\":\"")
        Self.hex(span.spanId, into: out)
        if span.parentId != 0 {
            out.append("\",\"parentSpanId\":\"")
            Self.hex(span.parentId, into: out)
        }
        out.append("\",\"name\":\"")
        out.append(Self.name(of: span))
        out.append(span.name.kind == .server ? "\",\"kind\":2" : "\",\"kind\":3")
        out.append(",\"startTimeUnixNano\":\"")
        Self.decimal(span.startNs, into: out)
        out.append("\",\"endTimeUnixNano\":\"")
        Self.decimal(span.endNs, into: out)
        if let operation = Self.storeOperation(of: span) {
            out.append("\",\"attributes\":[{\"key\":\"db.operation.name\",\"value\":{\"stringValue\":\"")
            out.append(operation)
            out.append("\"}}")
        } else {
            out.append("\",\"attributes\":[{\"key\":\"http.request.method\",\"value\":{\"stringValue\":\"")
            out.append(Self.methodName(span.method) ?? "_OTHER")
            out.append("\"}}")
        }
        if span.status != 0 {
            out.append(",{\"key\":\"http.response.status_code\",\"value\":{\"intValue\":\"")
            Self.decimal(UInt64(span.status), into: out)
            out.append("\"}}")
        }
        if span.failed {
            out.append(",{\"key\":\"error.type\",\"value\":{\"stringValue\":\"")
            out.append(Self.errorType(of: span))
            out.append("\"}}")
        }
        // OTLP's STATUS_CODE_ERROR, or UNSET: the instrumentation does not claim success.
        out.append(span.isError ? "],\"status\":{\"code\":2}}" : "],\"status\":{\"code\":0}}")
    }

    /// The span's name: a server span is named by its method, as HTTP semantic conventions
    /// say. Plain ASCII without quotes, like every fixed piece written here: nothing to escape.
    static func name(of span: SpanRecord) -> StaticString {
        switch span.name {
        case .request: methodName(span.method) ?? "HTTP"
        case .upstream: "upstream"
        case .appleToken: "apple token exchange"
        case .appleKeys: "apple keys fetch"
        case .storeClaim: "store claim"
        case .appleRevoke: "apple token revoke"
        case .appleRefresh: "apple token refresh"
        case .storeRevoke: "store revoke"
        case .storeEnqueue: "store enqueue"
        case .storeAck: "store ack"
        }
    }

    /// The store operation of a store span (`db.operation.name`); nil for an HTTP call.
    static func storeOperation(of span: SpanRecord) -> StaticString? {
        switch span.name {
        case .storeClaim: "claim"
        case .storeRevoke: "revoke"
        case .storeEnqueue: "enqueue"
        case .storeAck: "ack"
        case .request, .upstream, .appleToken, .appleKeys, .appleRevoke, .appleRefresh: nil
        }
    }

    static func errorType(of span: SpanRecord) -> StaticString {
        switch span.name {
        case .request: "incomplete_response"
        case .storeClaim, .storeRevoke, .storeEnqueue, .storeAck: "store_unavailable"
        case .upstream, .appleToken, .appleKeys, .appleRevoke, .appleRefresh: span.status == 0 ? "no_response" : "invalid_response"
        }
    }

    static func methodName(_ method: HTTPMethod) -> StaticString? {
        switch method {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        case .patch: "PATCH"
        case .trace: "TRACE"
        case .connect: "CONNECT"
        case .other: nil
        }
    }

    private func attribute(_ key: String, string value: String, into out: JSONBuffer) {
        out.append("{\"key\":")
        Self.string(key, into: out)
        out.append(",\"value\":{\"stringValue\":")
        Self.string(value, into: out)
        out.append("}}")
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func string(_ value: String, into out: JSONBuffer) {
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0..<0x20:
                out.append("\\u00")
                out.append(HexDigit.lower(byte >> 4))
                out.append(HexDigit.lower(byte & 0xf))
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    static func hex(_ value: UInt64, into out: JSONBuffer) {
        out.append(word: Hex16.digits(value >> 32))
        out.append(word: Hex16.digits(value & 0xffff_ffff))
    }

    static func decimal(_ value: UInt64, into out: JSONBuffer) {
        // Two digits per division (a nanosecond time has 19), from a table of "00"…"99".
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = value
            var index = buffer.count
            while rest >= 100 {
                let pair = Int(rest % 100) &* 2
                rest /= 100
                index -= 2
                buffer[index] = pairs[pair]
                buffer[index + 1] = pairs[pair + 1]
            }
            if rest >= 10 {
                index -= 2
                buffer[index] = pairs[Int(rest) &* 2]
                buffer[index + 1] = pairs[Int(rest) &* 2 + 1]
            } else {
                index -= 1
                buffer[index] = UInt8(truncatingIfNeeded: rest) &+ UInt8(ascii: "0")
            }
            out.append(UnsafeRawBufferPointer(rebasing: buffer[index...]))
        }
    }

    /// "00" to "99", two bytes each. Spelled as a loop: the one-expression `flatMap` took the
    /// type checker seconds.
    private static let pairs: [UInt8] = {
        var digits = [UInt8]()
        digits.reserveCapacity(200)
        for value in 0..<100 {
            let zero = UInt8(ascii: "0")
            digits.append(zero + UInt8(value / 10))
            digits.append(zero + UInt8(value % 10))
        }
        return digits
    }()
}
