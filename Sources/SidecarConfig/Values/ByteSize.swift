/// Byte sizes: `512` (plain numbers are bytes), `16KiB`, `10MiB`, `1GiB`; also `KB`/`MB`/`GB`
/// (powers of 1000) and `B`.
public enum ByteSize {
    private static let units: [(suffix: String, factor: Int)] = [
        ("", 1), ("B", 1),
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
        ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000),
    ]

    public static func parse(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 18, let number = Int(digits) else { return nil }
        let suffix = text.dropFirst(digits.count)
        guard let factor = units.first(where: { $0.suffix == suffix })?.factor else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: factor)
        return overflow ? nil : bytes
    }

    /// The shortest exact binary spelling, e.g. `16KiB`, `1MiB`, `1500`.
    public static func format(_ bytes: Int) -> String {
        for (suffix, factor) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        where bytes != 0 && bytes % factor == 0 {
            return "\(bytes / factor)\(suffix)"
        }
        return "\(bytes)"
    }
}
