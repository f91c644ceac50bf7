import SidecarHTTP2
import Synchronization

/// The latest published counters of every worker; the admin loop renders their sum.
final class MetricsBoard: Sendable {
    private let slots: Mutex<[WorkerMetrics]>
    /// The `server` label of each slot of the upstream metrics.
    let serverLabels = ServerLabels()
    /// The sites' names, by index (the `site` label); empty without sites; replaced on reload.
    private let siteNames = Mutex<[String]>([])

    init(workers: Int) { slots = Mutex([WorkerMetrics](repeating: WorkerMetrics(), count: workers)) }

    func setSiteNames(_ names: [String]) {
        siteNames.withLock { $0 = Array(names.prefix(WorkerMetrics.maxUpstreams)) }
    }

    func publish(_ metrics: WorkerMetrics, worker: Int) {
        slots.withLock { $0[worker] = metrics }
    }

    var total: WorkerMetrics { slots.withLock { $0.reduce(WorkerMetrics(), +) } }

    /// Prometheus text exposition format 0.0.4.
    func render() -> String { Self.render(total, servers: serverLabels.assigned, sites: siteNames.withLock { $0 }) }

    static func render(
        _ total: WorkerMetrics, servers: [(slot: Int, upstream: String, server: String)], sites: [String] = []
    ) -> String {
        var out = Exposition()
        out.family("sidecar_requests_total", "counter", "Requests answered, by who answered and status class.")
        for route in WorkerMetrics.Route.allCases {
            let name = route == .upstream ? "upstream" : "sidecar"
            for statusClass in 0..<6 {
                let code = statusClass < 5 ? "\(statusClass + 1)xx" : "other"
                out.sample("sidecar_requests_total", "route=\"\(name)\",code=\"\(code)\"",
                           total.requests[route.rawValue * 6 + statusClass])
            }
        }
        if !sites.isEmpty {
            out.family("sidecar_site_requests_total", "counter",
                       "Requests answered, by the site their host named (sites) and status class.")
            for (index, site) in sites.enumerated() {
                for statusClass in 0..<6 {
                    let code = statusClass < 5 ? "\(statusClass + 1)xx" : "other"
                    out.sample("sidecar_site_requests_total", "site=\"\(site)\",code=\"\(code)\"",
                               total.siteRequests[index * 6 + statusClass])
                }
            }
        }
        out.family("sidecar_requests_by_protocol_total", "counter",
                   "Requests answered, by the protocol the client spoke (http1: HTTP/1.0 and 1.1; http2: h2 and h2c).")
        out.sample("sidecar_requests_by_protocol_total", "protocol=\"http1\"", total.requestsByProtocol[0])
        out.sample("sidecar_requests_by_protocol_total", "protocol=\"http2\"", total.requestsByProtocol[1])
        out.family("sidecar_session_cache_total", "counter",
                   "Session cookies and bearer tokens looked up in the workers' session caches, by whether they were found (not found: opened again).")
        out.sample("sidecar_session_cache_total", "result=\"hit\"", total.sessionCache[0])
        out.sample("sidecar_session_cache_total", "result=\"miss\"", total.sessionCache[1])
        out.family("sidecar_request_duration_seconds", "histogram",
                   "Time from a request's first byte to the end of its answer, by who answered.")
        for route in WorkerMetrics.Route.allCases {
            out.histogram("sidecar_request_duration_seconds", labels: "route=\"\(route == .upstream ? "upstream" : "sidecar")\"",
                          total.requestDuration[route.rawValue])
        }
        // The catch-all slot is shown once something is counted in it.
        let shown = servers.filter { $0.slot < ServerLabels.slots - 1 || total.upstreamConnectFailures[$0.slot] > 0
            || total.upstreamLatency[$0.slot].count > 0 }
        out.family("sidecar_upstream_response_seconds", "histogram",
                   "Time from sending a request upstream to its response head, by upstream and server.")
        for (slot, upstream, server) in shown {
            out.histogram("sidecar_upstream_response_seconds", labels: Self.labels(upstream: upstream, server: server),
                          total.upstreamLatency[slot])
        }
        out.family("sidecar_upstream_connect_failures_total", "counter",
                   "Upstream connections refused, reset or timed out, by upstream and server.")
        for (slot, upstream, server) in shown {
            out.sample("sidecar_upstream_connect_failures_total", Self.labels(upstream: upstream, server: server),
                       total.upstreamConnectFailures[slot])
        }
        out.family("sidecar_responses_incomplete_total", "counter",
                   "Exchanges that ended before the response was complete, by reason.")
        for reason in IncompleteReason.allCases {
            out.sample("sidecar_responses_incomplete_total", "reason=\"\(reason.label)\"", total.incomplete[reason.rawValue])
        }
        out.family("sidecar_proxy_protocol_refusals_total", "counter",
                   "Connections closed before their PROXY protocol header was read (proxy_protocol), by reason.")
        for reason in ProxyHeaderRefusal.allCases {
            out.sample("sidecar_proxy_protocol_refusals_total", "reason=\"\(reason.label)\"",
                       total.proxyHeaderRefusals[reason.rawValue])
        }
        out.family("sidecar_http2_connections_total", "counter", "Client connections that spoke HTTP/2 (h2 or h2c).")
        out.sample("sidecar_http2_connections_total", "", total.http2[0])
        out.family("sidecar_http2_streams_total", "counter", "HTTP/2 streams that carried a request.")
        out.sample("sidecar_http2_streams_total", "", total.http2[1])
        out.family("sidecar_http2_refusals_total", "counter",
                   "HTTP/2 connections ended with GOAWAY for exceeding a bound (floods, rapid reset, header lists), by reason.")
        for (index, reason) in H2Session.Refusal.allCases.enumerated() {
            out.sample("sidecar_http2_refusals_total", "reason=\"\(reason.rawValue)\"", total.http2Refusals[index])
        }
        out.family("sidecar_accept_descriptor_exhausted_total", "counter",
                   "Accepts that failed for lack of file descriptors (EMFILE/ENFILE); slots were freed each time.")
        out.sample("sidecar_accept_descriptor_exhausted_total", "", total.acceptDescriptorFailures)
        out.family("sidecar_open_connections", "gauge", "Client connections open now.")
        out.sample("sidecar_open_connections", "", UInt64(max(0, total.openConnections)))

        out.family("sidecar_logins_total", "counter",
                   "Sign-in callbacks by outcome: ok or the failure's reason code (failures shown once seen).")
        for (index, label) in LoginOutcome.labels.enumerated() where index == LoginOutcome.ok || total.logins[index] > 0 {
            out.sample("sidecar_logins_total", "outcome=\"\(label)\"", total.logins[index])
        }
        out.family("sidecar_native_signins_total", "counter",
                   "Native-app sign-ins (POST /native) by outcome: ok or the failure's reason code (failures shown once seen).")
        for (index, label) in NativeOutcome.labels.enumerated() where index == NativeOutcome.ok || total.nativeSignIns[index] > 0 {
            out.sample("sidecar_native_signins_total", "outcome=\"\(label)\"", total.nativeSignIns[index])
        }
        out.family("sidecar_native_refreshes_total", "counter",
                   "Bearer session tokens re-sealed by POST /native/refresh: ok, or why the token was refused.")
        for (index, label) in NativeRefreshOutcome.labels.enumerated() where index == 0 || total.nativeRefreshes[index] > 0 {
            out.sample("sidecar_native_refreshes_total", "outcome=\"\(label)\"", total.nativeRefreshes[index])
        }
        out.family("sidecar_sessions_total", "counter",
                   "Session cookies and bearer tokens opened: accepted, or rejected with the reason.")
        for carrier in SessionCarrier.allCases {
            for outcome in SessionOutcome.allCases {
                out.sample("sidecar_sessions_total",
                           "via=\"\(carrier.label)\",result=\"\(outcome.result)\",reason=\"\(outcome.reason)\"",
                           total.sessions(outcome, via: carrier))
            }
        }
        out.family("sidecar_session_reseals_total", "counter",
                   "Session cookies sealed again: a new idle deadline, or moved to the first secret.")
        for reason in ResealReason.allCases {
            out.sample("sidecar_session_reseals_total", "reason=\"\(reason.label)\"", total.reseals[reason.rawValue])
        }
        out.family("sidecar_apple_notifications_total", "counter",
                   "Apple server-to-server notifications by outcome (revoked, acknowledged, duplicate, invalid, unavailable).")
        for outcome in NotificationOutcome.allCases {
            out.sample("sidecar_apple_notifications_total", "outcome=\"\(outcome.label)\"", total.notifications[outcome.rawValue])
        }
        out.family("sidecar_notification_forwards_total", "counter",
                   "Deliveries of verified events to notifications.forward_to: delivered, or failed and retried later.")
        out.sample("sidecar_notification_forwards_total", "result=\"delivered\"", total.forwards[0])
        out.sample("sidecar_notification_forwards_total", "result=\"retried\"", total.forwards[1])
        out.family("sidecar_account_deletions_total", "counter",
                   "POST /revoke (account deletion) by outcome: revoked, no_refresh_token, or why nothing was revoked.")
        for outcome in AccountDeletionOutcome.allCases {
            out.sample("sidecar_account_deletions_total", "outcome=\"\(outcome.label)\"", total.accountDeletions[outcome.rawValue])
        }
        out.family("sidecar_session_revalidations_total", "counter",
                   "Checks of a session's Apple refresh token (session.revalidate): the session confirmed, ended, or kept after Apple failed to answer.")
        for outcome in RevalidationOutcome.allCases {
            out.sample("sidecar_session_revalidations_total",
                       "result=\"\(outcome.result)\",reason=\"\(outcome.reason)\"", total.revalidations[outcome.rawValue])
        }
        out.family("sidecar_jwks_refreshes_total", "counter", "Fetches of Apple's signing keys, by result.")
        out.sample("sidecar_jwks_refreshes_total", "result=\"ok\"", total.jwksRefreshes[0])
        out.sample("sidecar_jwks_refreshes_total", "result=\"error\"", total.jwksRefreshes[1])
        out.family("sidecar_apple_request_seconds", "histogram", "Duration of calls to Apple, by endpoint.")
        for call in AppleCall.allCases {
            out.histogram("sidecar_apple_request_seconds", labels: "call=\"\(call.label)\"", total.appleLatency[call.rawValue])
        }
        return out.text
    }
}

extension MetricsBoard {
    /// `upstream="…",server="…"`, escaped as the text format requires (a unix socket's path
    /// may hold any byte).
    static func labels(upstream: String, server: String) -> String {
        "upstream=\"\(escape(upstream))\",server=\"\(escape(server))\""
    }

    private static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

/// Writes the text format: `# HELP` / `# TYPE` per family, then `name{labels} value` lines.
private struct Exposition {
    var text = ""

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: String, _ value: UInt64) {
        text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
    }

    mutating func histogram(_ name: String, labels: String, _ histogram: LatencyHistogram) {
        let prefix = labels.isEmpty ? "" : labels + ","
        var cumulative: UInt64 = 0
        for (i, bound) in LatencyHistogram.boundsMs.enumerated() {
            cumulative &+= histogram.buckets[i]
            text += "\(name)_bucket{\(prefix)le=\"\(Double(bound) / 1000)\"} \(cumulative)\n"
        }
        cumulative &+= histogram.buckets[LatencyHistogram.boundsMs.count]
        text += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(cumulative)\n"
        let suffix = labels.isEmpty ? "" : "{\(labels)}"
        text += "\(name)_sum\(suffix) \(Double(histogram.sumMs) / 1000)\n"
        text += "\(name)_count\(suffix) \(histogram.count)\n"
    }
}
