import SidecarConfig
import SidecarEvent

/// An `https://` upstream's TLS, shared by every worker: the verifying context, with the CA
/// file and client certificate read when it is made (at start and on each SIGHUP, so a
/// renewed certificate or CA is taken without a restart), and the name the server must prove.
final class UpstreamTLSContext: Sendable {
    let context: TLSClientContext
    /// `server_name`: sent by SNI and verified for every server; nil: each server's own host.
    let configuredName: String?
    let verifies: Bool

    init(settings: Config.UpstreamTLS) throws(TLSSetupError) {
        context = try TLSClientContext(upstream: TLSClientContext.UpstreamOptions(
            caFile: settings.caFile, clientCertificate: settings.clientCertificate, clientKey: settings.clientKey,
            verify: settings.verify))
        configuredName = settings.serverName
        verifies = settings.verify
    }

    /// The name a server at `host` must prove (and SNI sends, unless an IP literal).
    func serverName(host: String) -> (name: String, isIPLiteral: Bool) {
        let name = configuredName ?? host
        return (name, HostName.isIPLiteral(name))
    }

    /// One per upstream, the top-level one first; nil for a plain one.
    static func load(_ options: ProxyOptions) throws(ProxyStartError) -> [UpstreamTLSContext?] {
        var contexts: [UpstreamTLSContext?] = []
        for (index, target) in options.allUpstreams.enumerated() {
            guard target.upstream.isTLS else {
                contexts.append(nil)
                continue
            }
            do {
                contexts.append(try UpstreamTLSContext(settings: target.tls))
            } catch {
                throw ProxyStartError(description: (index == 0 ? "upstream_tls: " : "upstreams.\(options.upstreamName(index)).tls: ")
                    + error.description)
            }
        }
        return contexts
    }

    /// What a failed certificate check means to an operator, from OpenSSL's `X509_V_ERR_*`.
    static func verdict(_ code: Int) -> String {
        switch code {
        case 9, 10: return "certificate not valid now (expired or not yet valid)"
        case 2, 18, 19, 20, 21: return "certificate from an unknown CA"
        case 62, 64: return "certificate for another name"
        default: return "certificate refused"
        }
    }
}
