import SidecarHTTP

/// Spans as an OTLP/HTTP JSON `ExportTraceServiceRequest` (OTLP's JSON mapping: ids in
/// lower-case hex, 64-bit times as decimal strings, enums as numbers). Runs on the
/// exporter thread only.
struct OTLPEncoder {
    /// `service.name` of the resource the spans come from.
    static let serviceName = "siwa-sidecar"
    let version: String

    /// The whole request body for `spans`, appended to `out`.
    func encode(_ spans: ArraySlice<SpanRecord>, into out: inout [UInt8]) {
        out.append("{\"resourceSpans\":[{\"resource\":{\"attributes\":[")
        attribute("service.name", string: Self.serviceName, into: &out)
        out.append(",")
        attribute("service.version", string: version, into: &out)
        out.append("]},\"scopeSpans\":[{\"scope\":{\"name\":")
        Self.string(Self.serviceName, into: &out)
        out.append(",\"version\":")
        Self.string(version, into: &out)
        out.append("},\"spans\":[")
        var first = true
        for span in spans {
            if !first { out.append(",") }
            first = false
            encode(span, into: &out)
        }
        out.append("]}]}]}")
    }

    private func encode(_ span: SpanRecord, into out: inout [UInt8]) {
        out.append("{\"traceId\":\"")
        Self.hex(span.traceIdHigh, into: &out)
        Self.hex(span.traceIdLow, into: &out)
        out.append("\",\"spanId\":\"")
        Self.hex(span.spanId, into: &out)
        if span.parentId != 0 {
            out.append("\",\"parentSpanId\":\"")
            Self.hex(span.parentId, into: &out)
        }
        out.append("\",\"name\":")
        Self.string(Self.name(of: span), into: &out)
        out.append(",\"kind\":")
        Self.decimal(UInt64(span.name.kind.rawValue), into: &out)
        out.append(",\"startTimeUnixNano\":\"")
        Self.decimal(span.startNs, into: &out)
        out.append("\",\"endTimeUnixNano\":\"")
        Self.decimal(span.endNs, into: &out)
        out.append("\",\"attributes\":[")
        attribute("http.request.method", string: Self.methodName(span.method) ?? "_OTHER", into: &out)
        if span.status != 0 {
            out.append(",")
            attribute("http.response.status_code", integer: UInt64(span.status), into: &out)
        }
        if span.failed {
            out.append(",")
            attribute("error.type", string: span.status == 0 ? "no_response" : "invalid_response", into: &out)
        }
        out.append("],\"status\":{\"code\":")
        // OTLP's STATUS_CODE_ERROR, or UNSET: the instrumentation does not claim success.
        out.append(span.isError ? "2" : "0")
        out.append("}}")
    }

    /// The span's name: a server span is named by its method, as HTTP semantic conventions say.
    static func name(of span: SpanRecord) -> String {
        switch span.name {
        case .request: methodName(span.method) ?? "HTTP"
        case .upstream: "upstream"
        case .appleToken: "apple token exchange"
        case .appleKeys: "apple keys fetch"
        }
    }

    static func methodName(_ method: HTTPMethod) -> String? {
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

    private func attribute(_ key: String, string value: String, into out: inout [UInt8]) {
        out.append("{\"key\":")
        Self.string(key, into: &out)
        out.append(",\"value\":{\"stringValue\":")
        Self.string(value, into: &out)
        out.append("}}")
    }

    private func attribute(_ key: String, integer value: UInt64, into out: inout [UInt8]) {
        out.append("{\"key\":")
        Self.string(key, into: &out)
        out.append(",\"value\":{\"intValue\":\"")
        Self.decimal(value, into: &out)
        out.append("\"}}")
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func string(_ value: String, into out: inout [UInt8]) {
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

    static func hex(_ value: UInt64, into out: inout [UInt8]) {
        for shift in stride(from: 60, through: 0, by: -4) {
            out.append(HexDigit.lower(UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xf))
        }
    }

    static func decimal(_ value: UInt64, into out: inout [UInt8]) {
        out.append(contentsOf: String(value).utf8)
    }
}

extension [UInt8] {
    fileprivate mutating func append(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
