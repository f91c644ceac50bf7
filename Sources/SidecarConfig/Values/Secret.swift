/// Secret material (a cookie key, a private key). Printing, interpolating or dumping it never
/// shows the value.
/// Deliberately not Equatable: comparing secrets is the crypto module's job, in constant time.
public struct Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let bytes: [UInt8]
    /// Where it came from, e.g. `env:SIDECAR_COOKIE_SECRET`, `file:/etc/key` or `inline` — safe to show.
    public let source: String

    public init(bytes: [UInt8], source: String) {
        self.bytes = bytes
        self.source = source
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public var description: String { "<secret from \(source)>" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["source": source]) }

    /// Resolves `env:NAME`, `file:/path` (one trailing newline trimmed) or an inline value.
    static func resolve(_ reference: String, environment: [String: String],
                        baseDirectory: String) -> Result<Secret, ValueError> {
        if reference.hasPrefix("env:") {
            let name = String(reference.dropFirst(4))
            guard !name.isEmpty else { return .failure(ValueError("env: needs a variable name, e.g. env:SIDECAR_COOKIE_SECRET")) }
            guard let value = environment[name] else {
                return .failure(ValueError("environment variable \(name) is not set", kind: .unresolvable))
            }
            guard !value.isEmpty else {
                return .failure(ValueError("environment variable \(name) is empty", kind: .unresolvable))
            }
            return .success(Secret(bytes: Array(value.utf8), source: "env:\(name)"))
        }
        if reference.hasPrefix("file:") {
            let path = String(reference.dropFirst(5))
            guard !path.isEmpty else { return .failure(ValueError("file: needs a path, e.g. file:/run/secrets/cookie")) }
            let resolved = FilePath.resolve(path, against: baseDirectory)
            return FilePath.contents(resolved, limit: 64 * 1024).flatMap { bytes in
                let trimmed = trimmingOneNewline(bytes)
                guard !trimmed.isEmpty else {
                    return .failure(ValueError("secret file \(quoted(resolved)) is empty", kind: .unresolvable))
                }
                return .success(Secret(bytes: trimmed, source: "file:\(resolved)"))
            }
        }
        guard !reference.isEmpty else { return .failure(ValueError("secret is empty")) }
        return .success(Secret(bytes: Array(reference.utf8), source: "inline"))
    }

    private static func trimmingOneNewline(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.last == UInt8(ascii: "\n") {
            let rest = bytes.dropLast()
            return Array(rest.last == UInt8(ascii: "\r") ? rest.dropLast() : rest)
        }
        return bytes
    }
}

/// Base64 in the standard or URL-safe alphabet, padding optional (what `sidecar secret`,
/// `openssl rand -base64` and most secret managers produce).
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") { padding += 1; continue }
            guard padding == 0, let value = sextet(byte) else { return nil }
            values.append(value)
        }
        guard values.count % 4 != 1, padding == 0 || (values.count + padding) % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 1 < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let bits = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (18 - 6 * $1.offset) }
            for byteIndex in 0..<(chunk.count - 1) { out.append(UInt8(truncatingIfNeeded: bits >> (16 - 8 * byteIndex))) }
            index += 4
        }
        return out
    }

    private static func sextet(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"), UInt8(ascii: "-"): return 62
        case UInt8(ascii: "/"), UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
