/// The query parameters whose values the access log masks (`name=***`): credentials and
/// one-time secrets (`code`, `state`, `id_token`, `api_key`, `X-Amz-Signature`, …) plus the
/// operator's `log.redact_query`.
///
/// A name is matched as the application reads it, not as it was spelled on the wire: percent-
/// decoded (`%63ode` is `code`), case-insensitive, with every byte other than a letter or a
/// digit dropped (`api_key`, `api-key`, `API.Key` and `apikey` are one name), and each part
/// of a bracketed name on its own (`code[]`, `code[0]`, `creds[password]`). Matching more
/// than an application would costs a masked value; matching less leaks a credential.
///
/// Per request, no allocation: a name is decoded into a small stack buffer, compared against
/// one flat array of canonical names.
struct QueryRedaction: Sendable, Equatable {
    static let builtIn = [
        "code", "state", "nonce", "code_verifier", "authorization_code", "authorizationcode",
        "token", "id_token", "identitytoken", "access_token", "refresh_token", "jwt", "assertion",
        "client_secret", "secret", "password", "passwd", "pwd", "pass", "auth", "authorization",
        "key", "api_key", "apikey", "access_key", "private_key", "sig", "signature",
        "session", "session_id", "sid",
        "x-amz-signature", "x-amz-credential", "x-amz-security-token",
        "x-goog-signature", "x-goog-credential",
    ]

    /// The canonical names one after another; `ends[i]` is where name `i` ends.
    private let flat: [UInt8]
    private let ends: [Int]
    /// The longest canonical name: a longer part cannot match and is not decoded further.
    private let longest: Int

    static let standard = QueryRedaction()

    /// `extra`: the operator's names (`log.redact_query`), added to the built-in ones.
    init(extra: [String] = []) {
        var flat: [UInt8] = [], ends: [Int] = [], seen = Set<[UInt8]>()
        for name in Self.builtIn + extra {
            let canonical = Self.canonical(Array(name.utf8))
            guard !canonical.isEmpty, seen.insert(canonical).inserted else { continue }
            flat += canonical
            ends.append(flat.count)
        }
        self.flat = flat
        self.ends = ends
        longest = zip(ends, [0] + ends).map { $0 - $1 }.max() ?? 0
    }

    /// Letters lower-cased and digits, in order; everything else dropped. Non-ASCII bytes
    /// stay (a name of only those is no built-in name, and must not collapse to nothing).
    static func canonical(_ name: [UInt8]) -> [UInt8] {
        name.compactMap(canonicalByte)
    }

    @inline(__always)
    private static func canonicalByte(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x41...0x5A: b | 0x20
        case 0x61...0x7A, 0x30...0x39, 0x80...0xFF: b
        default: nil
        }
    }

    /// Whether the value of the parameter named `raw` (as written in the query, before `=`)
    /// is masked.
    func masks(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard longest > 0, !raw.isEmpty else { return false }
        let capacity = longest
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity + 1) { part -> Bool in
            var count = 0
            var i = 0
            while i <= raw.count {
                var byte: UInt8 = 0
                var boundary = i == raw.count
                if !boundary {
                    byte = raw[i]
                    if byte == UInt8(ascii: "%"), i + 2 < raw.count,
                       let high = Self.hex(raw[i + 1]), let low = Self.hex(raw[i + 2]) {
                        byte = high << 4 | low
                        i += 2
                    }
                    boundary = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
                }
                if boundary {
                    if count > 0, count <= capacity, contains(UnsafeBufferPointer(rebasing: part[..<count])) {
                        return true
                    }
                    count = 0
                } else if let c = Self.canonicalByte(byte) {
                    // Past the longest name the part cannot match; keep counting, stop storing.
                    if count < capacity + 1 { part[count] = c }
                    count += 1
                }
                i += 1
            }
            return false
        }
    }

    private func contains(_ part: UnsafeBufferPointer<UInt8>) -> Bool {
        flat.withUnsafeBufferPointer { names in
            var start = 0
            for end in ends {
                defer { start = end }
                guard end - start == part.count else { continue }
                var i = 0
                while i < part.count, names[start + i] == part[i] { i += 1 }
                if i == part.count { return true }
            }
            return false
        }
    }

    @inline(__always)
    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
}
