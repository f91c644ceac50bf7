import SidecarEvent

/// One line per request, in the configured format (`log.format`), formatted by hand into a
/// per-worker buffer and flushed when it is large or on a short timer — not one write per
/// line under load. The schema is the application log's (`ts`, `level`, `msg`, then the
/// request's fields), so one parser reads every line.
final class AccessLog {
    enum Format { case json, text }

    private var line = LogLineWriter()
    private let sink: LogSink
    private let format: Format
    private var flushTimer: Timer?
    private var cachedSecond: Int64 = -1
    private var cachedPrefix: [UInt8] = []
    private static let flushThreshold = 32 * 1024
    private static let flushDelayMs: Int64 = 200

    init(loop: EventLoop, sink: LogSink, format: Format = .json) {
        self.sink = sink
        self.format = format
        line.out.reserveCapacity(Self.flushThreshold + 2048)
        flushTimer = Timer(loop: loop) { [unowned self] in self.flush() }
    }

    /// What one exchange logs. Byte fields are borrowed from the request head for the call.
    struct Entry {
        var timestampMs: Int64
        var requestId: ArraySlice<UInt8>
        var client: ArraySlice<UInt8>
        var method: ArraySlice<UInt8>
        var host: ArraySlice<UInt8>
        var path: ArraySlice<UInt8>
        /// Raw query; values of sensitive parameters are masked when written.
        var query: ArraySlice<UInt8>
        var status: Int
        var bytes: UInt64
        var durationMs: Int64
        /// Set when the exchange reached the upstream.
        var upstream: ArraySlice<UInt8>?
        var upstreamStatus: Int?
        var upstreamMs: Int64?
        var userId: ArraySlice<UInt8>?
        var userAgent: ArraySlice<UInt8>
        var incomplete: IncompleteReason?
    }

    func record(_ e: Entry) {
        let second = e.timestampMs / 1000
        if second != cachedSecond {
            cachedSecond = second
            cachedPrefix = LogTimestamp.secondPrefix(second)
        }
        let level: StaticString = e.incomplete != nil || e.status >= 500 ? "warning" : "info"
        line.format = format == .json ? .json : .text
        line.begin(timestampPrefix: cachedPrefix, millis: Int(e.timestampMs % 1000), level: level, message: "request")
        line.string("request_id", e.requestId)
        line.string("client", e.client)
        line.string("method", e.method)
        if !e.host.isEmpty { line.string("host", e.host) }
        line.string("path", e.path)
        if !e.query.isEmpty { line.maskedQuery("query", e.query) }
        line.int("status", Int64(e.status))
        line.int("bytes", Int64(clamping: e.bytes))
        line.int("duration_ms", e.durationMs)
        if let upstream = e.upstream { line.string("upstream", upstream) }
        if let status = e.upstreamStatus { line.int("upstream_status", Int64(status)) }
        if let ms = e.upstreamMs { line.int("upstream_ms", ms) }
        if let user = e.userId { line.string("user_id", user) }
        if !e.userAgent.isEmpty { line.string("user_agent", e.userAgent) }
        if let reason = e.incomplete { line.string("error", reason.label) }
        line.end()
        if line.out.count >= Self.flushThreshold {
            flush()
        } else if flushTimer?.isScheduled == false {
            flushTimer?.schedule(afterMilliseconds: Self.flushDelayMs)
        }
    }

    func flush() {
        guard !line.out.isEmpty else { return }
        sink.write(line.out.bytes)
        line.out.removeAll()
    }
}
