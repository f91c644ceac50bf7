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
        let time = LogTimestamp.now()
        var line: String
        switch format {
        case .json:
            line = "{\"ts\":\(Self.quote(time)),\"level\":\(Self.quote(event.level.rawValue)),"
                + "\"msg\":\(Self.quote(event.message.description)),\"logger\":\(Self.quote(label))"
            for key in merged.keys.sorted() {
                line += ",\(Self.quote(key)):\(Self.json(merged[key]!))"
            }
            line += "}\n"
        case .text:
            line = "\(time) \(event.level.rawValue) \(event.message) logger=\(Self.text(label))"
            for key in merged.keys.sorted() { line += " \(key)=\(Self.text(merged[key]!.description))" }
            line += "\n"
        }
        var bytes = Array(line.utf8)
        _ = write(2, &bytes, bytes.count)
    }

    /// Numbers and booleans given as such (`.stringConvertible(42)`) stay JSON numbers and
    /// booleans; everything else is a string.
    static func json(_ value: Logger.MetadataValue) -> String {
        if case .stringConvertible(let convertible) = value {
            switch convertible {
            case is any BinaryInteger, is Bool: return convertible.description
            case let number as Double where number.isFinite: return convertible.description
            default: break
            }
        }
        return quote(value.description)
    }

    /// A text-format value: bare when it has no space, quote, backslash or control byte.
    static func text(_ value: String) -> String {
        let plain = !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c }
        return plain ? value : quote(value)
    }

    static func quote(_ s: String) -> String { JSONValue.quoted(s) }
}
