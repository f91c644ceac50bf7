extension Names {
    /// A `log.redact_query` entry: a query parameter's name as the application reads it.
    /// The access log matches names by their letters and digits alone (`QueryRedaction`), so
    /// an entry needs at least one; printable ASCII, at most 64 bytes.
    static func queryParameter(_ text: String) -> Result<String, ValueError> {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }),
              bytes.contains(where: { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) })
        else {
            return .failure(ValueError(
                "invalid query parameter name \(quoted(text)) (1–64 printable ASCII characters, at least one a letter or digit)"))
        }
        return .success(text)
    }
}
