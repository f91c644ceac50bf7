import Glibc
import Logging
import SidecarConfig
import SidecarEvent
import Synchronization

/// The process's one span exporter: a thread that empties every worker's `SpanQueue` and
/// posts the spans to `tracing.otlp_endpoint` as OTLP/HTTP JSON — a batch once a second, or
/// sooner when `batchLimit` spans are waiting. Nothing on the request path waits for it: a
/// worker only copies a span into its own bounded queue. A collector that is down, slow or
/// refusing loses the spans of its batches (counted as dropped), never requests.
final class SpanExporter: Sendable {
    /// Spans each worker's queue holds before it drops them (about 64 bytes each).
    static let queueCapacity = 4_096
    /// Spans in one POST (about 600 bytes of JSON each).
    static let batchLimit = 512
    static let intervalMs: Int64 = 1_000
    /// How often the thread looks at the queues' fill between batches: well within the time a
    /// queue takes to fill at 100,000 spans a second (about 40 ms), which 100 ms was not.
    static let pollMs: Int64 = 20

    let queues: [SpanQueue]
    private let encoder: OTLPEncoder
    private let state = Mutex(State())
    private let exported = Atomic<UInt64>(0)
    private let dropped = Atomic<UInt64>(0)
    private let failedBatches = Atomic<UInt64>(0)

    private struct State {
        var endpoint: HTTPURL?
        /// The verifying context for an `https` endpoint.
        var tls: TLSClientContext?
        var thread: WorkerThread?
        var stopping = false
    }

    init(workers: Int, version: String, queueCapacity: Int = SpanExporter.queueCapacity) {
        queues = (0..<max(1, workers)).map { _ in SpanQueue(capacity: queueCapacity) }
        encoder = OTLPEncoder(version: version)
    }

    enum SetupError: Error, CustomStringConvertible {
        case thread(EventError)
        case tls(TLSClientContext.SetupError)

        var description: String {
            switch self {
            case .thread(let error): "tracing: \(error)"
            case .tls(.caFileUnreadable(let file)): "tracing.otlp_ca_file: no CA certificate could be read from \(file)"
            case .tls(.tlsContextCreation): "tracing: creating the TLS client context failed"
            }
        }
    }

    /// The collector from now on (at start and on SIGHUP); the thread starts with the first
    /// endpoint and stays for the life of the process. An `https` endpoint gets a fresh
    /// verifying context, so a reload also reads a replaced CA file.
    func configure(endpoint: HTTPURL?, caFile: String? = nil) throws(SetupError) {
        var tls: TLSClientContext?
        if let endpoint, endpoint.isHTTPS {
            do { tls = try TLSClientContext(caFile: caFile) } catch { throw .tls(error) }
        }
        let start = state.withLock { state -> Bool in
            state.endpoint = endpoint
            state.tls = tls
            return endpoint != nil && state.thread == nil && !state.stopping
        }
        guard start else { return }
        do {
            let thread = try WorkerThread { [self] in run() }
            state.withLock { $0.thread = thread }
        } catch {
            throw .thread(error)
        }
    }

    /// Sends what the queues still hold (one try, `finalTimeoutMs` at most) and ends the
    /// thread. The workers have stopped: nothing more is recorded.
    func stop() {
        let thread = state.withLock { state -> WorkerThread? in
            state.stopping = true
            return state.thread
        }
        thread?.join()
    }

    static let finalTimeoutMs: Int64 = 1_000

    var exportedTotal: UInt64 { exported.load(ordering: .relaxed) }
    var droppedTotal: UInt64 { dropped.load(ordering: .relaxed) }
    var failedBatchesTotal: UInt64 { failedBatches.load(ordering: .relaxed) }

    // MARK: the thread

    /// What the thread keeps from one cycle to the next.
    private struct Cycle {
        var batch: [SpanRecord] = []
        let body = JSONBuffer()
        /// The last post failed: the next success logs that spans flow again.
        var failing = false
        /// The queue each batch starts at, turning, so none waits behind a busier one.
        var first = 0
        /// Once stopping: when the last flush must be over.
        var finalDeadlineMs: Int64?
        /// The sender, with its kept connection, while the endpoint and TLS context stay.
        var sender: OTLPSender?
    }

    private func run() {
        var cycle = Cycle()
        cycle.batch.reserveCapacity(Self.batchLimit)
        var lastSendMs = OTLPSender.monotonicMs()
        while true {
            let stopping = state.withLock { $0.stopping }
            if !stopping { Self.sleep(ms: Self.pollMs) }
            let pending = queues.reduce(0) { $0 + $1.count }
            let nowMs = OTLPSender.monotonicMs()
            guard stopping || pending >= Self.batchLimit || nowMs - lastSendMs >= Self.intervalMs else { continue }
            lastSendMs = nowMs
            export(&cycle)
            if stopping { return }
        }
    }

    /// Posts what the queues hold, a batch at a time, until they are empty or a post fails;
    /// after a failure the rest waits for the next cycle (a queue that fills meanwhile drops
    /// and counts), so a collector that hangs holds the exporter one time-out per cycle, not
    /// one per batch. Once stopping, every post fits in what is left of `finalTimeoutMs`
    /// and what does not is dropped.
    private func export(_ cycle: inout Cycle) {
        while true {
            let (endpoint, tls, stopping) = state.withLock { ($0.endpoint, $0.tls, $0.stopping) }
            var timeoutMs = OTLPSender.defaultTimeoutMs
            if stopping {
                let nowMs = OTLPSender.monotonicMs()
                let deadline = cycle.finalDeadlineMs ?? nowMs + Self.finalTimeoutMs
                cycle.finalDeadlineMs = deadline
                timeoutMs = min(timeoutMs, deadline - nowMs)
            }
            fill(&cycle)
            guard !cycle.batch.isEmpty else { return }
            guard let endpoint, timeoutMs > 0 else {
                // No collector (any more), or no time left: what was queued is lost.
                dropped.add(UInt64(cycle.batch.count), ordering: .relaxed)
                continue
            }
            cycle.body.removeAll()
            encoder.encode(cycle.batch[...], into: cycle.body)
            let sender: OTLPSender
            if let kept = cycle.sender, kept.endpoint == endpoint, kept.tls === tls {
                sender = kept
            } else {
                sender = OTLPSender(endpoint: endpoint, tls: tls)  // first, or a reload's: a new connection
                cycle.sender = sender
            }
            sender.timeoutMs = timeoutMs
            let outcome = sender.post(cycle.body.bytes)
            if outcome == .accepted {
                exported.add(UInt64(cycle.batch.count), ordering: .relaxed)
                if cycle.failing {
                    cycle.failing = false
                    Self.logger.info("tracing: spans are exported again", metadata: ["endpoint": "\(endpoint)"])
                }
                if cycle.batch.count < Self.batchLimit && !stopping { return }
                continue
            }
            dropped.add(UInt64(cycle.batch.count), ordering: .relaxed)
            failedBatches.add(1, ordering: .relaxed)
            if !cycle.failing {
                cycle.failing = true
                Self.logger.warning("tracing: spans could not be exported and are dropped until the collector accepts them",
                                    metadata: ["endpoint": "\(endpoint)", "error": "\(Self.describe(outcome))"])
            }
            guard stopping else { return }
            // At shutdown one failure is enough: the rest is dropped, not waited for.
            cycle.finalDeadlineMs = OTLPSender.monotonicMs()
        }
    }

    /// Up to `batchLimit` spans from the queues into `cycle.batch`; counts what they dropped.
    private func fill(_ cycle: inout Cycle) {
        cycle.batch.removeAll(keepingCapacity: true)
        cycle.first = (cycle.first + 1) % queues.count
        var lost: UInt64 = 0
        for offset in 0..<queues.count {
            let queue = queues[(cycle.first + offset) % queues.count]
            lost &+= queue.drain(into: &cycle.batch, limit: Self.batchLimit - cycle.batch.count)
        }
        if lost > 0 { dropped.add(lost, ordering: .relaxed) }
    }

    private static let logger = Logger(label: "sidecar")

    static func describe(_ outcome: OTLPSender.Outcome) -> String {
        switch outcome {
        case .accepted: "accepted"
        case .rejected(let status): "collector answered \(status)"
        case .failed(let why): why
        }
    }

    private static func sleep(ms: Int64) {
        var request = timespec(tv_sec: Int(ms / 1000), tv_nsec: Int(ms % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

extension SpanExporter {
    /// Its counters in Prometheus text (always shown, zero without an endpoint).
    func renderMetrics() -> String {
        """
        # HELP sidecar_trace_spans_exported_total Spans the OTLP collector accepted (tracing.otlp_endpoint).
        # TYPE sidecar_trace_spans_exported_total counter
        sidecar_trace_spans_exported_total \(exportedTotal)
        # HELP sidecar_trace_spans_dropped_total Spans lost: a full queue, or a batch the collector did not accept in time.
        # TYPE sidecar_trace_spans_dropped_total counter
        sidecar_trace_spans_dropped_total \(droppedTotal)
        # HELP sidecar_trace_export_failures_total Span batches the collector refused, did not answer in time, or could not be verified (TLS).
        # TYPE sidecar_trace_export_failures_total counter
        sidecar_trace_export_failures_total \(failedBatchesTotal)

        """
    }
}
