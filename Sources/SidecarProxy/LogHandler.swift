import Glibc
import Logging
import SidecarCrypto

/// A small swift-log handler for start-up and error logs: one line per message to stderr,
/// JSON (`log.format: json`) or text. Never on the request path (access logs are separate).
public struct SidecarLogHandler: LogHandler {
    public enum Format: Sendable { case json, text }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    private let label: String
    private let format: Format

    public init(label: String, format: Format, level: Logger.Level) {
        self.label = label
        self.format = format
        logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let time = Self.timestamp()
        var line: String
        switch format {
        case .json:
            line = "{\"ts\":\(Self.quote(time)),\"level\":\(Self.quote(event.level.rawValue)),"
                + "\"logger\":\(Self.quote(label)),\"msg\":\(Self.quote(event.message.description))"
            for key in merged.keys.sorted() {
                line += ",\(Self.quote(key)):\(Self.quote(merged[key]!.description))"
            }
            line += "}\n"
        case .text:
            line = "\(time) \(event.level.rawValue) \(event.message)"
            for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!.description)" }
            line += "\n"
        }
        var bytes = Array(line.utf8)
        _ = write(2, &bytes, bytes.count)
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func pad(_ v: Int32, _ width: Int = 2) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1))-\(pad(parts.tm_mday))T"
            + "\(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec))."
            + "\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }

    static func quote(_ s: String) -> String { JSONValue.quoted(s) }
}
