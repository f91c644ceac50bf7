import SidecarEvent
import SidecarHTTP

/// The settings exchanges read, as one generation: built at start and again for each SIGHUP,
/// never changed in place. A reload replaces the whole generation, so what a request reads
/// (the policy, the header rules, the limits) always belongs together.
final class ExchangeSettings {
    let options: ProxyOptions
    let policy: AccessPolicy
    let rewriter: RequestRewriter
    let headLimits: HTTPHeadLimits
    /// Output queued above this stops reading the other side until it drains (backpressure).
    /// One read (up to `EventLoop.readScratchSize`) lands on top of it, so this is
    /// `limits.response_buffer` less one read: what an exchange holds for a slow side stays
    /// within the configured bound in each direction (with the 64 KiB default, the other side
    /// is read only when nothing is queued: the kernel's socket buffers do the buffering).
    let holdLimit: Int
    /// `tracing.trust_incoming`, read on every request without going through `options`.
    let trustIncomingTrace: Bool
    /// Sampled exchanges record spans (`tracing.otlp_endpoint` is set).
    let exportsSpans: Bool
    /// `TraceContext.samplingThreshold` of `tracing.sample_ratio`, for the traces started here.
    let sampleThreshold: UInt64

    init(options: ProxyOptions, auth: Authenticator?) {
        self.options = options
        policy = AccessPolicy(options: options, sessions: auth?.sessions)
        rewriter = RequestRewriter(options: options)
        headLimits = HTTPHeadLimits(maxHeadBytes: options.maxHeaderBytes)
        holdLimit = max(0, options.responseBufferBytes - EventLoop.readScratchSize)
        trustIncomingTrace = options.config.tracing.trustIncoming
        exportsSpans = options.config.tracing.otlpEndpoint != nil
        sampleThreshold = TraceContext.samplingThreshold(ratio: options.config.tracing.sampleRatio)
    }
}
