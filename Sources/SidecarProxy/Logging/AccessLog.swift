import SidecarEvent
import SidecarHTTP

/// One line per request, in the configured format (`log.format`), formatted by hand into a
/// per-worker buffer and flushed when it is large or on a short timer — not one write per
/// line under load. The schema is the application log's (`ts`, `level`, `msg`, then the
/// request's fields), so one parser reads every line.
final class AccessLog {
    enum Format { case json, text }

    private var line = LogLineWriter()
    private let sink: LogSink
    private let format: Format
    private let redaction: QueryRedaction
    private var flushTimer: Timer?
    /// Whether `flushTimer` is set (kept here: asking libevent is a call per line).
    private var flushScheduled = false
    private var cachedSecond: Int64 = -1
    private var cachedPrefix: [UInt8] = []
    /// The start of an `info` line up to its first request field — timestamp, level and
    /// message — as written for `infoStartMs`: one copy per line instead of eight pieces, made
    /// again when the millisecond changes (every few dozen lines under load).
    private let infoStart = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: AccessLog.infoStartCapacity)
    private var infoStartCount = 0
    private var infoStartMs: Int64 = -1
    private static let infoStartCapacity = 128
    private static let flushThreshold = 32 * 1024
    private static let flushDelayMs: Int64 = 200

    init(loop: EventLoop, sink: LogSink, format: Format = .json, redaction: QueryRedaction = .standard) {
        self.sink = sink
        self.format = format
        self.redaction = redaction
        line.out.reserveCapacity(Self.flushThreshold + 2048)
        flushTimer = Timer(loop: loop) { [unowned self] in self.flush() }
    }

    deinit { infoStart.deallocate() }

    /// What one exchange logs. The byte fields point into the connection's, the request
    /// head's and the session's storage, valid only for the `record` call.
    struct Entry {
        var timestampMs: Int64
        var requestId: UnsafeRawBufferPointer
        var trace: TraceContext
        var client: UnsafeRawBufferPointer
        var method = AccessLog.none
        var host = AccessLog.none
        /// The name of the site (`sites`) the host names; nil without sites.
        var site: UnsafeRawBufferPointer?
        var path: UnsafeRawBufferPointer
        /// Raw query; values of sensitive parameters are masked when written.
        var query = AccessLog.none
        var status: Int
        var bytes: UInt64
        var durationMs: Int64
        /// Set when the exchange reached the upstream.
        var upstream: UnsafeRawBufferPointer?
        var upstreamStatus: Int?
        var upstreamMs: Int64?
        var userId: UnsafeRawBufferPointer?
        /// `userId` is bare (`LogLineWriter.bare`): checked once when its session was opened.
        var userIdIsBare = false
        /// `method` came from a parsed request line (a token), not from a failed parse.
        var methodIsToken = false
        var userAgent = AccessLog.none
        /// Over HTTP/2 (`"protocol":"HTTP/2.0"`); HTTP/1.x lines carry no protocol field.
        var http2 = false
        var incomplete: IncompleteReason?
        /// Why the request's session credential was refused (it was then answered as one
        /// without a session).
        var sessionRefusal: SessionOutcome?
    }

    /// An empty byte field.
    static var none: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }
    static var http2Name: UnsafeRawBufferPointer {
        let name: StaticString = "HTTP/2.0"
        return UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
    }

    func record(_ e: Entry) {
        let second = e.timestampMs / 1000
        if second != cachedSecond {
            cachedSecond = second
            cachedPrefix = LogTimestamp.secondPrefix(second)
        }
        let warning = e.incomplete != nil || e.status >= 500
        line.format = format == .json ? .json : .text
        if !warning, e.timestampMs == infoStartMs {
            line.out.append(UnsafeBufferPointer(start: infoStart.baseAddress, count: infoStartCount))
        } else {
            let lineStart = line.out.count
            line.begin(timestampPrefix: cachedPrefix, millis: Int(e.timestampMs % 1000), level: warning ? "warning" : "info",
                       message: "request")
            let written = line.out.bytes[lineStart...]
            if !warning, written.count <= Self.infoStartCapacity {
                UnsafeMutableRawBufferPointer(infoStart).copyBytes(from: written)
                infoStartCount = written.count
                infoStartMs = e.timestampMs
            }
        }
        // The request id is [A-Za-z0-9._-] (generated, or accepted only so: RequestIDGenerator)
        // and the method a token: both bare. The user id is bare when its session said so.
        if e.requestId.isEmpty { line.string(Key.requestID, e.requestId) } else { line.bare(Key.requestID, e.requestId) }
        line.traceId(Key.traceID, e.trace)
        line.string(Key.client, e.client)
        if e.methodIsToken, !e.method.isEmpty { line.bare(Key.method, e.method) } else { line.string(Key.method, e.method) }
        if e.http2 { line.bare(Key.protocolName, Self.http2Name) }
        if !e.host.isEmpty { line.string(Key.host, e.host) }
        // A site's name is [a-z0-9_-] (checked when the configuration is read): bare.
        if let site = e.site { line.bare(Key.site, site) }
        line.string(Key.path, e.path)
        if !e.query.isEmpty { line.maskedQuery("query", e.query, redaction) }
        line.int(Key.status, Int64(e.status))
        line.int(Key.bytes, Int64(clamping: e.bytes))
        line.int(Key.durationMs, e.durationMs)
        if let upstream = e.upstream { line.string(Key.upstream, upstream) }
        if let status = e.upstreamStatus { line.int(Key.upstreamStatus, Int64(status)) }
        if let ms = e.upstreamMs { line.int(Key.upstreamMs, ms) }
        if let user = e.userId { if e.userIdIsBare { line.bare(Key.userID, user) } else { line.string(Key.userID, user) } }
        if !e.userAgent.isEmpty { line.string(Key.userAgent, e.userAgent) }
        if let reason = e.incomplete { line.string("error", reason.label) }
        if let refusal = e.sessionRefusal {
            let reason = refusal.accessReason
            line.bare(Key.reason, UnsafeRawBufferPointer(start: reason.utf8Start, count: reason.utf8CodeUnitCount))
        }
        line.end()
        if line.out.count >= Self.flushThreshold {
            flush()
        } else if !flushScheduled, let flushTimer {
            flushScheduled = true
            flushTimer.schedule(afterMilliseconds: Self.flushDelayMs)
        }
    }

    private typealias Key = LogLineWriter.Key

    func flush() {
        flushScheduled = false
        guard !line.out.isEmpty else { return }
        sink.write(line.out.bytes)
        line.out.removeAll()
    }
}

extension LogLineWriter.Key {
    static let reason = Self(json: ",\"reason\":", text: " reason=")
    static let requestID = Self(json: ",\"request_id\":", text: " request_id=")
    static let traceID = Self(json: ",\"trace_id\":", text: " trace_id=")
    static let client = Self(json: ",\"client\":", text: " client=")
    static let method = Self(json: ",\"method\":", text: " method=")
    static let protocolName = Self(json: ",\"protocol\":", text: " protocol=")
    static let host = Self(json: ",\"host\":", text: " host=")
    static let site = Self(json: ",\"site\":", text: " site=")
    static let path = Self(json: ",\"path\":", text: " path=")
    static let status = Self(json: ",\"status\":", text: " status=")
    static let bytes = Self(json: ",\"bytes\":", text: " bytes=")
    static let durationMs = Self(json: ",\"duration_ms\":", text: " duration_ms=")
    static let upstream = Self(json: ",\"upstream\":", text: " upstream=")
    static let upstreamStatus = Self(json: ",\"upstream_status\":", text: " upstream_status=")
    static let upstreamMs = Self(json: ",\"upstream_ms\":", text: " upstream_ms=")
    static let userID = Self(json: ",\"user_id\":", text: " user_id=")
    static let userAgent = Self(json: ",\"user_agent\":", text: " user_agent=")
}
