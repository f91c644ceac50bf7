import Glibc
import SidecarCrypto
import SidecarHTTP

/// Per-worker source of trace and span ids: SplitMix64 from a seed drawn once from the
/// system's random source. Trace ids must be unique, not secret: SplitMix64 maps its counter
/// one-to-one, so a worker repeats no id for 2^64 draws, and no id costs a system call.
struct TraceIDGenerator {
    private var state: UInt64

    init() {
        var seed: UInt64 = 0
        let drawn = withUnsafeMutableBytes(of: &seed) { bytes in
            (try? SecureRandom.fill(bytes.bindMemory(to: UInt8.self))) != nil
        }
        if !drawn {
            // Uniqueness is what matters: the clock and the thread.
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            seed = UInt64(bitPattern: Int64(ts.tv_sec)) &* 1_000_000_000 &+ UInt64(bitPattern: Int64(ts.tv_nsec))
            seed ^= UInt64(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))))
        }
        state = seed
    }

    @inline(__always) mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// An id that is not all zeros (the trace context's "invalid" value; one draw in 2^64).
    @inline(__always) mutating func spanId() -> UInt64 {
        while true {
            let value = next()
            if value != 0 { return value }
        }
    }

    /// A new trace with the sidecar's span in it, sampled when the low half of its id is at
    /// most `threshold` (`TraceContext.samplingThreshold`).
    mutating func startTrace(sampling threshold: UInt64 = .max) -> TraceContext {
        let high = next(), low = spanId()
        return .starting(traceIdHigh: high, traceIdLow: low, spanId: spanId(), sampled: low <= threshold)
    }
}
