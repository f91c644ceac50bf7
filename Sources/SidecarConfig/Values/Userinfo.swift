/// Strips the `user:password@` of every URL in a text before it is shown: configuration
/// errors and warnings quote what the operator wrote (`upstream`, `public_url`,
/// `tracing.otlp_endpoint`, a `SIDECAR_*` variable), and a credential in a URL must not reach
/// a terminal, a CI log or a journal because the URL was refused for some other reason.
enum Userinfo {
    static let mask = "***"

    /// `https://user:pass@host/x` → `https://***@host/x`, for every `scheme://` in `text`.
    /// The URL runs to a space, a quote or a control character, and what precedes its last
    /// `@` is masked: a password the operator did not percent-encode may hold `/`, `?`, `#`
    /// or `@`, so the authority's own end cannot be trusted. An `@` later in a path or query
    /// masks the host too; a hidden host is the price of never printing a password.
    static func redacted(_ text: String) -> String {
        guard text.contains("@"), text.contains("://") else { return text }
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            guard i + 3 <= scalars.count, scalars[i] == ":", scalars[i + 1] == "/", scalars[i + 2] == "/" else {
                out.append(scalars[i])
                i += 1
                continue
            }
            out.append(contentsOf: scalars[i..<(i + 3)])
            let start = i + 3
            var end = start
            while end < scalars.count, !endsURL(scalars[end]) { end += 1 }
            if let at = scalars[start..<end].lastIndex(of: "@") {
                out.append(contentsOf: mask.unicodeScalars)
                out.append(contentsOf: scalars[at..<end])
            } else {
                out.append(contentsOf: scalars[start..<end])
            }
            i = end
        }
        return String(out)
    }

    private static func endsURL(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "\"", "'", "`", "\\", " ", "<", ">": true
        default: c.value <= 0x20 || (0x7f...0x9f).contains(c.value) || c.properties.isWhitespace
        }
    }
}
