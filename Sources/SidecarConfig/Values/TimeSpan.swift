/// A configured duration such as `90s`, `15m`, `24h`, `7d`, `500ms` or `1h30m`,
/// kept in whole milliseconds.
public struct TimeSpan: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func seconds(_ value: Int64) -> TimeSpan { TimeSpan(milliseconds: value * 1000) }
    public static func minutes(_ value: Int64) -> TimeSpan { .seconds(value * 60) }
    public static func hours(_ value: Int64) -> TimeSpan { .seconds(value * 3600) }
    public static func days(_ value: Int64) -> TimeSpan { .seconds(value * 86_400) }

    /// Whole seconds (rounded down).
    public var seconds: Int64 { milliseconds / 1000 }
    public var timeInterval: Double { Double(milliseconds) / 1000 }
    public var duration: Duration { .milliseconds(milliseconds) }
    public var isZero: Bool { milliseconds == 0 }

    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.milliseconds < rhs.milliseconds }

    private static let units: [(suffix: String, milliseconds: Int64)] = [
        ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1),
    ]

    /// The shortest spelling in the config syntax, e.g. `1h30m`, `500ms`, `0s`.
    public var description: String {
        guard milliseconds > 0 else { return milliseconds == 0 ? "0s" : "\(milliseconds)ms" }
        var rest = milliseconds
        var text = ""
        for unit in Self.units where rest >= unit.milliseconds {
            text += "\(rest / unit.milliseconds)\(unit.suffix)"
            rest %= unit.milliseconds
        }
        return text
    }

    /// Parses `90s`, `15m`, `24h`, `7d`, `500ms`, combined forms like `1h30m`, and a bare `0`.
    public init?(parsing text: String) {
        let bytes = Array(text.utf8)
        if bytes == [UInt8(ascii: "0")] { self.init(milliseconds: 0); return }
        guard !bytes.isEmpty else { return nil }
        var total: Int64 = 0
        var index = 0
        var lastUnit = Int64.max
        while index < bytes.count {
            var number: Int64 = 0
            let digitsStart = index
            while index < bytes.count, let digit = Self.digit(bytes[index]) {
                let (shifted, overflow1) = number.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = shifted.addingReportingOverflow(digit)
                guard !overflow1, !overflow2 else { return nil }
                number = sum
                index += 1
            }
            guard index > digitsStart else { return nil }
            let unitStart = index
            while index < bytes.count, Self.digit(bytes[index]) == nil { index += 1 }
            let suffix = String(decoding: bytes[unitStart..<index], as: UTF8.self)
            // Units must be known and in decreasing order (`1h30m`, not `30m1h` or `1h1h`).
            guard let unit = Self.units.first(where: { $0.suffix == suffix })?.milliseconds,
                  unit < lastUnit else { return nil }
            lastUnit = unit
            let (scaled, overflow1) = number.multipliedReportingOverflow(by: unit)
            let (sum, overflow2) = total.addingReportingOverflow(scaled)
            guard !overflow1, !overflow2 else { return nil }
            total = sum
        }
        self.init(milliseconds: total)
    }

    private static func digit(_ byte: UInt8) -> Int64? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int64(byte - UInt8(ascii: "0")) : nil
    }
}
