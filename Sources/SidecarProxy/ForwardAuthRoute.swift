import SidecarHTTP

/// What `rules` say about the request a forward-auth proxy (nginx `auth_request`, Caddy
/// `forward_auth`, Traefik ForwardAuth) asks `{prefix}/check` about.
enum ForwardAuthRoute {
    /// No rules are configured: the session alone decides, as before rules existed.
    case noRules
    /// What the rules say about every reading of the forwarded request (`Route.verdict`);
    /// where no rule matches a reading, it needs a session (public paths are the front
    /// proxy's to serve without asking).
    case verdict(RuleVerdict, Route)
    /// Rules are configured but the request asked about is not known for certain: the peer
    /// is not in `trusted_proxies`, or sent no URI, or one that does not normalize. Refused:
    /// answering for a request the rules were not applied to could admit what a rule denies.
    case unknown(reason: String)

    /// The forwarded request from a trusted peer: `X-Forwarded-Uri` (Traefik, Caddy) or
    /// `X-Original-URI` (the nginx example), its method from `X-Forwarded-Method` or
    /// `X-Original-Method` (GET when absent) and any method-override field the front proxy
    /// passed on, its host from `X-Forwarded-Host` or `Host`. The URI is held to the same
    /// normalization and readings as a request the sidecar forwards itself.
    init(
        _ route: Route, _ head: HTTPRequestHead, _ view: HeadView, peerTrusted: Bool,
        separators: EncodedSeparators = .reject
    ) {
        guard !route.isEmpty else {
            self = .noRules
            return
        }
        guard peerTrusted else {
            self = .unknown(reason: "untrusted_peer")
            return
        }
        guard let uri = view.firstValue("x-forwarded-uri") ?? view.firstValue("x-original-uri") else {
            self = .unknown(reason: "no_forwarded_uri")
            return
        }
        let target = view[uri]
        let end = target.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? target.count
        var path: [UInt8] = []
        do {
            try PathNormalizer.normalize(
                UnsafeRawBufferPointer(rebasing: target[0..<end]), separators: separators, into: &path)
        } catch {
            self = .unknown(reason: "invalid_forwarded_uri")
            return
        }
        var method = HTTPMethod.get
        if let given = view.firstValue("x-forwarded-method") ?? view.firstValue("x-original-method") {
            method = HTTPMethodSet.method(named: String(decoding: view[given], as: UTF8.self)) ?? .other
        }
        let host = (view.firstValue("x-forwarded-host") ?? head.authority ?? head.host).map { view[$0] }
        var lenient: [UInt8] = []
        path.withUnsafeBytes { LenientPath.append($0, into: &lenient) }
        let verdict = path.withUnsafeBytes { pathBytes in
            lenient.withUnsafeBytes { lenientBytes in
                var readings = RequestReadings(path: pathBytes, lenient: lenientBytes, method: method, host: host)
                readings.overrides = AccessPolicy.methodOverrides(view)
                return route.verdict(readings, publicPaths: nil)
            }
        }
        self = .verdict(verdict, route)
    }
}
