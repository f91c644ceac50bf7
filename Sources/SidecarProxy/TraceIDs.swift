import Glibc
import SidecarCrypto

/// Per-worker source of trace and span ids: xoshiro256** seeded once from the system's random
/// source. Trace ids must be unique, not secret, so a fast generator is enough — and no id
/// costs a system call.
struct TraceIDGenerator {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    init() {
        var seed = [UInt64](repeating: 0, count: 4)
        let drawn = seed.withUnsafeMutableBytes { bytes in
            (try? SecureRandom.fill(bytes.bindMemory(to: UInt8.self))) != nil
        }
        if !drawn {
            // Uniqueness is what matters: time, clock and thread through SplitMix64.
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            var mix = UInt64(bitPattern: Int64(ts.tv_sec)) &* 1_000_000_000 &+ UInt64(bitPattern: Int64(ts.tv_nsec))
            mix ^= UInt64(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))))
            for i in 0..<4 { seed[i] = Self.splitMix64(&mix) }
        }
        s0 = seed[0]
        s1 = seed[1]
        s2 = seed[2]
        s3 = seed[3] | (seed[0] | seed[1] | seed[2] | seed[3] == 0 ? 1 : 0)  // the one state it never leaves
    }

    private static func splitMix64(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    @inline(__always) mutating func next() -> UInt64 {
        let result = (s1 &* 5).rotatedLeft(7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = s3.rotatedLeft(45)
        return result
    }

    /// An id that is not all zeros (the trace context's "invalid" value).
    @inline(__always) mutating func nonZero() -> UInt64 {
        while true {
            let value = next()
            if value != 0 { return value }
        }
    }
}

extension UInt64 {
    @inline(__always) fileprivate func rotatedLeft(_ k: UInt64) -> UInt64 { self << k | self >> (64 - k) }
}
