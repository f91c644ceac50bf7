import Synchronization

/// What the admin listener reports of the managed certificate: whether a CA-issued one is
/// served (`/readyz` is 503 until then), when it expires (`sidecar_tls_certificate_expiry_seconds`)
/// and how renewal goes. Written by the ACME thread, read by the admin loop.
public final class ACMEStatus: Sendable {
    public struct Snapshot: Sendable, Equatable {
        /// The served certificate's notAfter (Unix seconds); nil while only the placeholder is served.
        public var notAfter: Int64?
        /// When the next order is due (Unix seconds).
        public var nextRenewal: Int64?
        /// Orders failed in a row since the last success.
        public var failures = 0
        public var lastError: String?
    }

    private let state = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ change: (inout Snapshot) -> Void) { state.withLock { change(&$0) } }

    /// nil when ready; else why `/readyz` fails.
    public var readinessProblem: String? {
        let snapshot = self.snapshot
        guard snapshot.notAfter == nil else { return nil }
        return "tls certificate not issued yet" + (snapshot.lastError.map { " (\($0))" } ?? "")
    }

    /// The Prometheus lines for `/metrics`.
    public func metrics(now: Int64) -> String {
        let snapshot = self.snapshot
        var text = "# HELP sidecar_tls_certificate_expiry_seconds Seconds until the served ACME certificate expires "
            + "(negative once expired; absent until one is issued).\n"
            + "# TYPE sidecar_tls_certificate_expiry_seconds gauge\n"
        if let notAfter = snapshot.notAfter { text += "sidecar_tls_certificate_expiry_seconds \(notAfter - now)\n" }
        text += "# HELP sidecar_acme_renewal_failures Certificate orders failed in a row since the last success.\n"
            + "# TYPE sidecar_acme_renewal_failures gauge\n"
            + "sidecar_acme_renewal_failures \(snapshot.failures)\n"
        return text
    }
}
