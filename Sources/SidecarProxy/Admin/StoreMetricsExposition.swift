import SidecarStore

/// The store's part of `/metrics`: its state, what it holds, and for the file
/// store the fsyncs every durable answer waits for.
enum StoreMetricsExposition {
    static func render(_ store: (any StoreBackend)?) -> String {
        guard let store else { return "" }
        let health = store.health, m = store.metrics
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { out += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n" }
        }
        let state: String
        switch health.state {
        case .ready: state = "ready"
        case .degraded: state = "degraded"
        case .unavailable: state = "unavailable"
        }
        family("sidecar_store_up", "gauge", "1 while the store accepts changes, by back-end and state.",
               [("backend=\"\(health.backend)\",state=\"\(state)\"", health.isReady ? "1" : "0")])
        family("sidecar_store_revoked_sessions", "gauge", "Session ids revoked and not yet expired.", [("", "\(m.revokedSessions)")])
        family("sidecar_store_revoked_subjects", "gauge", "Users whose earlier sessions are revoked.", [("", "\(m.revokedSubjects)")])
        family("sidecar_store_single_use_keys", "gauge", "Spent login states, nonces and notification ids remembered, by kind.",
               byKind(m.singleUseKeysByKind, total: m.singleUseKeys))
        family("sidecar_store_claim_overflows_total", "counter",
               "Single-use claims refused, or login states forgotten early, because their kind's table was full.",
               byKind(m.claimOverflowsByKind, total: m.claimOverflows))
        family("sidecar_store_pending_forwards", "gauge", "Notification forwards not yet delivered.", [("", "\(m.pendingForwards)")])
        family("sidecar_store_write_failures_total", "counter", "Changes that failed to reach the disk.", [("", "\(m.writeFailures)")])
        if health.backend == "redis" {
            family("sidecar_store_commands_total", "counter", "Redis commands answered.", [("", "\(m.remoteCommands)")])
            family("sidecar_store_command_failures_total", "counter",
                   "Redis commands that failed: error reply, timeout or no connection (the step answered 503).",
                   [("", "\(m.remoteCommandFailures)")])
            family("sidecar_store_command_seconds_total", "counter", "Round-trip time of the answered commands.",
                   [("", "\(Double(m.remoteCommandMillisecondsTotal) / 1e3)")])
            family("sidecar_store_messages_total", "counter", "Revocations received from other replicas (pub/sub).",
                   [("", "\(m.remoteMessages)")])
            family("sidecar_store_resyncs_total", "counter", "Full resyncs of the revocations from Redis.",
                   [("", "\(m.remoteResyncs)")])
        }
        if health.backend == "file" {
            family("sidecar_store_syncs_total", "counter", "fdatasync/fsync calls of the file store.", [("", "\(m.syncs)")])
            family("sidecar_store_sync_seconds_total", "counter", "Time spent in those syncs.",
                   [("", "\(Double(m.syncMicrosecondsTotal) / 1e6)")])
            family("sidecar_store_sync_seconds_max", "gauge", "The longest sync since start.",
                   [("", "\(Double(m.syncMicrosecondsMax) / 1e6)")])
            family("sidecar_store_file_bytes", "gauge", "Size of the store's log file.", [("", "\(m.fileBytes)")])
            family("sidecar_store_compactions_total", "counter", "Rewrites of the log without expired entries.",
                   [("", "\(m.compactions)")])
        }
        return out
    }

    /// One sample per kind; a store that does not count by kind (Redis) gives its total.
    private static func byKind(_ counts: [UInt64], total: UInt64) -> [(String, String)] {
        guard !counts.isEmpty else { return [("", "\(total)")] }
        return zip(ClaimKind.allCases, counts).map { ("kind=\"\($0.label)\"", "\($1)") }
    }
}
