/// A certificate the sidecar obtains itself (`tls.acme`), as the admin listener reports it:
/// `/readyz` fails with `readinessProblem` until one is issued, `/metrics` adds `metrics`.
/// Closures, so that the proxy needs no knowledge of ACME.
public struct CertificateReport: Sendable {
    public let readinessProblem: @Sendable () -> String?
    public let metrics: @Sendable () -> String

    public init(readinessProblem: @escaping @Sendable () -> String?, metrics: @escaping @Sendable () -> String) {
        self.readinessProblem = readinessProblem
        self.metrics = metrics
    }
}
