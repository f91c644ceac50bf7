import Glibc

/// The one timestamp format of every log line, access and application alike, in both
/// formats: RFC 3339 UTC with milliseconds (`2026-11-24T16:18:41.123Z`).
enum LogTimestamp {
    /// `yyyy-mm-ddThh:mm:ss.` for a Unix second (20 bytes).
    static func secondPrefix(_ seconds: Int64) -> [UInt8] {
        var parts = tm()
        var t = time_t(seconds)
        gmtime_r(&t, &parts)
        var out: [UInt8] = []
        out.reserveCapacity(20)
        func digits(_ value: Int32, _ width: Int) {
            var v = Int(value)
            var tmp = [UInt8](repeating: UInt8(ascii: "0"), count: width)
            for i in stride(from: width - 1, through: 0, by: -1) {
                tmp[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            out += tmp
        }
        digits(parts.tm_year + 1900, 4); out.append(UInt8(ascii: "-"))
        digits(parts.tm_mon + 1, 2); out.append(UInt8(ascii: "-"))
        digits(parts.tm_mday, 2); out.append(UInt8(ascii: "T"))
        digits(parts.tm_hour, 2); out.append(UInt8(ascii: ":"))
        digits(parts.tm_min, 2); out.append(UInt8(ascii: ":"))
        digits(parts.tm_sec, 2); out.append(UInt8(ascii: "."))
        return out
    }

    /// The current time in the log format (application log lines; not per request).
    static func now() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var bytes = secondPrefix(Int64(now.tv_sec))
        appendMillis(Int(now.tv_nsec / 1_000_000), to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func appendMillis(_ millis: Int, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "0") + UInt8(millis / 100 % 10))
        out.append(UInt8(ascii: "0") + UInt8(millis / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(millis % 10))
        out.append(UInt8(ascii: "Z"))
    }
}
