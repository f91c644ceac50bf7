import Glibc
import SidecarEvent

/// Serializes writes of complete log lines from several workers to one fd (stdout).
public final class LogSink: @unchecked Sendable {
    private let fd: Int32
    private var lock = pthread_mutex_t()

    public init(fd: Int32 = 1) {
        self.fd = fd
        pthread_mutex_init(&lock, nil)
    }

    deinit { pthread_mutex_destroy(&lock) }

    func write(_ bytes: UnsafeRawBufferPointer) {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }  // stdout gone: drop the log rather than block the proxy
            offset += n
        }
    }
}

/// One JSON line per request, formatted by hand into a per-worker buffer and flushed when it
/// is large or on a short timer — not one write per line under load.
final class AccessLog {
    private var buffer: [UInt8] = []
    private let sink: LogSink
    private var flushTimer: Timer?
    private static let flushThreshold = 32 * 1024
    private static let flushDelayMs: Int64 = 200

    init(loop: EventLoop, sink: LogSink) {
        self.sink = sink
        buffer.reserveCapacity(Self.flushThreshold + 1024)
        flushTimer = Timer(loop: loop) { [unowned self] in self.flush() }
    }

    struct Entry {
        var method: ArraySlice<UInt8>
        var path: ArraySlice<UInt8>
        var status: Int
        var bytes: UInt64
        var durationMs: Int64
        var upstreamMs: Int64?
        var requestId: [UInt8]
        var timestampMs: Int64
    }

    func record(_ e: Entry) {
        append("{\"ts\":")
        appendInt(e.timestampMs / 1000)
        buffer.append(UInt8(ascii: "."))
        let millis = Int(e.timestampMs % 1000)
        if millis < 100 { buffer.append(UInt8(ascii: "0")) }
        if millis < 10 { buffer.append(UInt8(ascii: "0")) }
        appendInt(Int64(millis))
        append(",\"method\":")
        appendString(e.method)
        append(",\"path\":")
        appendString(e.path)
        append(",\"status\":")
        appendInt(Int64(e.status))
        append(",\"bytes\":")
        appendInt(Int64(clamping: e.bytes))
        append(",\"duration_ms\":")
        appendInt(e.durationMs)
        append(",\"upstream_ms\":")
        if let upstream = e.upstreamMs { appendInt(upstream) } else { append("null") }
        append(",\"request_id\":")
        appendString(e.requestId[...])
        append("}\n")
        if buffer.count >= Self.flushThreshold {
            flush()
        } else if flushTimer?.isScheduled == false {
            flushTimer?.schedule(afterMilliseconds: Self.flushDelayMs)
        }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { sink.write($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    private func append(_ s: StaticString) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private func appendInt(_ value: Int64) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
            appendInt(value == Int64.min ? Int64.max : -value)
            return
        }
        let number = UInt64(value)
        var divisor: UInt64 = 1
        while number / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            buffer.append(UInt8(ascii: "0") + UInt8(number / divisor % 10))
            divisor /= 10
        }
    }

    /// A JSON string; bytes outside printable ASCII and `"`/`\` are escaped.
    private func appendString(_ bytes: ArraySlice<UInt8>) {
        buffer.append(UInt8(ascii: "\""))
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                buffer.append(UInt8(ascii: "\\"))
                buffer.append(b)
            case 0x20..<0x7f:
                buffer.append(b)
            default:
                append("\\u00")
                buffer.append(hexDigit(b >> 4))
                buffer.append(hexDigit(b & 0xf))
            }
        }
        buffer.append(UInt8(ascii: "\""))
    }
}

@inline(__always) func hexDigit(_ v: UInt8) -> UInt8 {
    v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10
}
