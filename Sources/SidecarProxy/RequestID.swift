import Glibc
import SidecarHTTP

/// Per-worker request-id generator: a random prefix drawn once plus a counter — unique
/// without a syscall per request.
struct RequestIDGenerator {
    private var prefix: [UInt8]
    private var counter: UInt64 = 0

    init() {
        var random = [UInt8](repeating: 0, count: 8)
        let fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        let got = fd < 0 ? -1 : random.withUnsafeMutableBytes { read(fd, $0.baseAddress, 8) }
        if fd >= 0 { Glibc.close(fd) }
        if got != 8 {
            // Uniqueness, not secrecy, is what matters here: fall back to time and thread.
            var seed = UInt64(UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))) ^ UInt64(time(nil))
            for i in 0..<8 {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                random[i] = UInt8(truncatingIfNeeded: seed >> 33)
            }
        }
        prefix = []
        for b in random {
            prefix.append(HexDigit.lower(b >> 4))
            prefix.append(HexDigit.lower(b & 0xf))
        }
        prefix.append(UInt8(ascii: "-"))
    }

    mutating func next() -> [UInt8] {
        var id: [UInt8] = []
        next(into: &id)
        return id
    }

    /// The next id written over `id`, reusing its capacity (no allocation per request).
    mutating func next(into id: inout [UInt8]) {
        counter &+= 1
        var digits = 1
        while digits < 16 && counter >> (4 * UInt64(digits)) != 0 { digits += 1 }
        if !id.isEmpty { id.removeAll(keepingCapacity: true) }
        id.append(contentsOf: prefix)
        var value = counter
        let end = id.count + digits
        id.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        for i in stride(from: end - 1, through: end - digits, by: -1) {
            id[i] = HexDigit.lower(UInt8(value & 0xf))
            value >>= 4
        }
    }

    /// A client-sent id is kept only if it matches `[A-Za-z0-9._-]{1,128}`.
    static func isAcceptable(_ bytes: some Collection<UInt8>) -> Bool {
        guard !bytes.isEmpty, bytes.count <= 128 else { return false }
        for b in bytes {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return true
    }
}
