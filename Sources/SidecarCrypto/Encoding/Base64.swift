import CByteScan

/// Strict base64url without padding (RFC 7515 §2) — the JOSE and cookie encoding.
/// Decoding rejects padding, whitespace, characters outside the alphabet and non-zero
/// trailing bits, so every byte string has exactly one accepted encoding.
public enum Base64URL {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64Core.encode(bytes, alphabet: Base64Core.urlAlphabet, pad: false)
    }

    /// Decodes `text`; nil if it is not canonical unpadded base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        if let fast = utf8.withContiguousStorageIfAvailable({ decode(bytes: $0) }) { return fast }
        return decode(bytes: Array(utf8))
    }

    /// Decodes ASCII bytes; nil if they are not canonical unpadded base64url.
    public static func decode(bytes: some Collection<UInt8>) -> [UInt8]? {
        withContiguousBytes(bytes) { input in
            guard let count = decodedCount(input.count) else { return nil }
            var output = [UInt8](repeating: 0, count: count)
            let ok = output.withUnsafeMutableBufferPointer { decode(input, into: $0) }
            return ok ? output : nil
        }
    }

    /// The decoded length of `encodedCount` characters, or nil if no valid encoding has that length.
    @inlinable public static func decodedCount(_ encodedCount: Int) -> Int? {
        switch encodedCount % 4 {
        case 0: encodedCount / 4 * 3
        case 2: encodedCount / 4 * 3 + 1
        case 3: encodedCount / 4 * 3 + 2
        default: nil
        }
    }

    /// Decodes into `output`, which must hold exactly `decodedCount(input.count)` bytes.
    /// Allocation-free; returns false for invalid input.
    public static func decode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        guard decodedCount(input.count) == output.count else { return false }
        // Whole 16-character blocks with SSSE3 (a sealed session is ~24 of them, decoded on
        // every session-cache miss); the rest — the tail with its strict trailing-bit rule,
        // and a block with a character outside the alphabet — by the scalar decoder.
        var done = 0
        if let source = input.baseAddress, let target = output.baseAddress {
            done = sidecar_base64url_decode_blocks(source, input.count, target, output.count)
        }
        guard done > 0 else { return Base64Core.decodeGroups(input, into: output, table: Base64Core.urlTable) }
        return Base64Core.decodeGroups(
            UnsafeBufferPointer(rebasing: input[done...]), into: UnsafeMutableBufferPointer(rebasing: output[(done / 4 * 3)...]),
            table: Base64Core.urlTable)
    }
}

/// Standard base64 with padding (RFC 4648 §4), strict: padding required, no whitespace,
/// canonical trailing bits. Used for secrets in configuration and `sidecar secret`.
public enum Base64 {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        Base64Core.encode(bytes, alphabet: Base64Core.standardAlphabet, pad: true)
    }

    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var padding = 0
        if input.last == UInt8(ascii: "=") { padding += 1 }
        if input.count >= 2, input[input.count - 2] == UInt8(ascii: "=") { padding += 1 }
        if padding == 1, input.count >= 2, input[input.count - 2] == UInt8(ascii: "=") { return nil }
        let body = input.dropLast(padding)
        guard let count = Base64URL.decodedCount(body.count) else { return nil }
        var output = [UInt8](repeating: 0, count: count)
        let ok = body.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer {
                Base64Core.decodeGroups(input, into: $0, table: Base64Core.standardTable)
            }
        }
        return ok ? output : nil
    }
}

@usableFromInline
enum Base64Core {
    static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    static let urlTable = table(urlAlphabet)
    static let standardTable = table(standardAlphabet)
    private static let invalid: UInt8 = 0xff

    private static func table(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }

    static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], pad: Bool) -> String {
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            for shift in [18, 12, 6, 0] { out.append(alphabet[Int(word >> UInt32(shift) & 0x3f)]) }
            index += 3
        }
        let rest = input.count - index
        if rest == 1 {
            let word = UInt32(input[index]) << 16
            out.append(alphabet[Int(word >> 18 & 0x3f)])
            out.append(alphabet[Int(word >> 12 & 0x3f)])
            if pad { out.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")]) }
        } else if rest == 2 {
            let word = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            out.append(alphabet[Int(word >> 18 & 0x3f)])
            out.append(alphabet[Int(word >> 12 & 0x3f)])
            out.append(alphabet[Int(word >> 6 & 0x3f)])
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded groups; `output.count` must equal the decoded length of `input.count`.
    static func decodeGroups(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>,
                             table: [UInt8]) -> Bool {
        table.withUnsafeBufferPointer { table in
            var bad: UInt8 = 0
            let fullGroups = input.count / 4
            // The full groups through raw pointers (`output.count` was checked against the
            // input's length by the callers): a sealed session is ~90 groups opened on every
            // session-cache miss, and per-element bounds checks doubled their cost.
            if fullGroups > 0, let source = input.baseAddress, let target = output.baseAddress,
               let lookup = table.baseAddress {
                var p = source, q = target
                let end = source + fullGroups * 4
                while p < end {
                    let a = lookup[Int(p[0])], b = lookup[Int(p[1])], c = lookup[Int(p[2])], d = lookup[Int(p[3])]
                    bad |= a | b | c | d
                    let word = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    q[0] = UInt8(truncatingIfNeeded: word >> 16)
                    q[1] = UInt8(truncatingIfNeeded: word >> 8)
                    q[2] = UInt8(truncatingIfNeeded: word)
                    p += 4
                    q += 3
                }
                bad &= 0x80  // invalid characters map to 0xff; valid ones are < 64
            }
            let inIndex = fullGroups * 4
            let outIndex = fullGroups * 3
            switch input.count - inIndex {
            case 0: break
            case 2:
                let a = table[Int(input[inIndex])], b = table[Int(input[inIndex + 1])]
                bad |= (a | b) & 0x80
                if b & 0x0f != 0 { return false } // non-canonical trailing bits
                output[outIndex] = (a & 0x3f) << 2 | (b & 0x3f) >> 4
            case 3:
                let a = table[Int(input[inIndex])], b = table[Int(input[inIndex + 1])]
                let c = table[Int(input[inIndex + 2])]
                bad |= (a | b | c) & 0x80
                if c & 0x03 != 0 { return false }
                output[outIndex] = (a & 0x3f) << 2 | (b & 0x3f) >> 4
                output[outIndex + 1] = (b & 0x0f) << 4 | (c & 0x3f) >> 2
            default: return false
            }
            return bad == 0
        }
    }
}
