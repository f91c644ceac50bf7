/// Rates a client must stay under on one connection, as token buckets (burst, then a refill
/// per second). Frames that cost the sidecar work but carry no request — resets, PING,
/// SETTINGS, PRIORITY, empty DATA — are what rapid reset (CVE-2023-44487) and the control-frame
/// floods (CVE-2019-9512/9515/9518) send by the thousand; a browser sends a handful.
struct H2FloodGuard {
    struct Bucket {
        let burst: Double
        let perSecond: Double
        var tokens: Double
        var lastMs: Int64

        init(burst: Int, perSecond: Int, nowMs: Int64) {
            self.burst = Double(burst)
            self.perSecond = Double(perSecond)
            tokens = Double(burst)
            lastMs = nowMs
        }

        /// Takes one token; false when none is left.
        mutating func take(nowMs: Int64) -> Bool {
            if nowMs > lastMs {
                tokens = min(burst, tokens + Double(nowMs - lastMs) * perSecond / 1000)
                lastMs = nowMs
            }
            guard tokens >= 1 else { return false }
            tokens -= 1
            return true
        }
    }

    /// Streams the client reset before their response completed.
    var resets: Bucket
    /// PING, SETTINGS, PRIORITY, WINDOW_UPDATE-free control frames and empty DATA frames.
    var control: Bucket

    init(maxStreams: Int, nowMs: Int64) {
        resets = Bucket(burst: 2 * maxStreams, perSecond: maxStreams, nowMs: nowMs)
        control = Bucket(burst: 1000, perSecond: 100, nowMs: nowMs)
    }
}
