import Logging
import SidecarEvent

/// A TLS connection to an upstream that failed on TLS itself: the certificate refused (expired,
/// from an unknown CA, for another name) or the server refusing the sidecar (no client
/// certificate). Never retried (the next try would fail alike) and never the client's fault: a
/// 502, one log line per interval naming the upstream, the server and the reason, and
/// `/readyz` failing with the reason until a connection succeeds again.
extension ConnectionContext {
    /// True when `connection` failed on TLS (then it was reported); false for any other failure.
    func reportUpstreamTLSFailure(_ connection: UpstreamConnection, upstream index: Int) -> Bool {
        guard let failure = connection.stream.tlsFailure else { return false }
        let pool = connection.pool
        let server = String(decoding: pool.text, as: UTF8.self)
        let verdict = failure.verifyCode != 0 ? UpstreamTLSContext.verdict(failure.verifyCode) : "TLS refused"
        let reason = "\(verdict): \(failure.reason)"
        readiness.upstreamFailed(index, reason: "\(server): \(reason)", atMs: nowMs)
        guard let suppressed = pool.tlsFailureLog.shouldLog(nowMs: nowMs) else { return true }
        var metadata: Logger.Metadata = [
            "upstream_name": "\(pool.name)", "upstream": "\(server)", "reason": "\(failure.reason)",
        ]
        if pool.tls != nil { metadata["server_name"] = "\(pool.tlsName.name)" }
        if failure.verifyCode != 0 { metadata["verify_error"] = .stringConvertible(failure.verifyCode) }
        if suppressed > 0 { metadata["suppressed"] = .stringConvertible(suppressed) }
        Logger(label: "sidecar").error(
            "upstream TLS failed (\(reason)): answered 502", metadata: metadata)
        return true
    }
}
