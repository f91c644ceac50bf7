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

    /// The forwarded request from a trusted peer: `X-Forwarded-Uri` (Traefik, Caddy, the nginx
    /// example), `X-Original-URI` (nginx) or `X-Original-URL` (ingress-nginx, an absolute URL),
    /// its method from `X-Forwarded-Method` or `X-Original-Method` (GET when absent) and any
    /// method-override field the front proxy passed on, its host from `X-Forwarded-Host` or
    /// `Host`. The URI is held to the same normalization and readings as a request the sidecar
    /// forwards itself.
    ///
    /// A front proxy sets the fields it knows and passes the client's own copies of the others
    /// on (nginx `auth_request` and ingress-nginx forward every request field to the check):
    /// so every copy of every one of them must name the same request — the strictest reading
    /// wins, and where they disagree there is no knowing which one the proxy meant: refused.
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
        var forwarded = ForwardedRequest()
        if let reason = forwarded.read(view, separators: separators) {
            self = .unknown(reason: reason)
            return
        }
        let (path, method, host) = (forwarded.path, forwarded.method, forwarded.host)
        guard let path else {
            self = .unknown(reason: "no_forwarded_uri")
            return
        }
        let verb = method.map { HTTPMethodSet.method(named: String(decoding: $0, as: UTF8.self)) ?? .other } ?? .get
        let requestHost = host ?? (head.authority ?? head.host).map { view[$0] }
        var lenient: [UInt8] = []
        path.withUnsafeBytes { LenientPath.append($0, into: &lenient) }
        let verdict = path.withUnsafeBytes { pathBytes in
            lenient.withUnsafeBytes { lenientBytes in
                var readings = RequestReadings(path: pathBytes, lenient: lenientBytes, method: verb, host: requestHost)
                readings.overrides = AccessPolicy.methodOverrides(view)
                return route.verdict(readings, publicPaths: nil)
            }
        }
        self = .verdict(verdict, route)
    }

    /// The path and query of an absolute URL (`https://host/path?q`): what follows the
    /// authority; a value that is not an absolute URL is taken as it is (a path).
    static func pathOfURL(_ url: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let scheme = url.firstIndex(of: UInt8(ascii: ":")), scheme + 2 < url.count,
              url[scheme + 1] == UInt8(ascii: "/"), url[scheme + 2] == UInt8(ascii: "/")
        else { return url }
        let authority = scheme + 3
        let pathStart = url[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? url.count
        guard pathStart < url.count, url[pathStart] == UInt8(ascii: "/") else {
            return UnsafeRawBufferPointer(start: Self.root.utf8Start, count: 1)
        }
        return UnsafeRawBufferPointer(rebasing: url[pathStart...])
    }

    private static let root: StaticString = "/"

    static func sameHost(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { ASCIIFold.lower($0) == ASCIIFold.lower($1) }
    }
}

/// The request a forward-auth proxy asks about, as the copies of its fields name it: every
/// copy of every field must name the same request, or there is no knowing which one the proxy
/// meant.
struct ForwardedRequest {
    /// The normalized path.
    var path: [UInt8]?
    var method: [UInt8]?
    var host: UnsafeRawBufferPointer?

    /// Reads `X-Forwarded-Uri`, `X-Original-URI`, `X-Original-URL`, `X-Forwarded-Method`,
    /// `X-Original-Method` and `X-Forwarded-Host` into what is known so far (a path form's
    /// own path, method and host included): the reason to refuse when a copy does not
    /// normalize or disagrees, nil otherwise.
    mutating func read(_ view: HeadView, separators: EncodedSeparators) -> String? {
        for field in view.fields {
            let value = view[field.value]
            if view.name(of: field, is: "x-forwarded-uri") || view.name(of: field, is: "x-original-uri")
                || view.name(of: field, is: "x-original-url")
            {
                let target = view.name(of: field, is: "x-original-url") ? ForwardAuthRoute.pathOfURL(value) : value
                let end = target.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? target.count
                var normalized: [UInt8] = []
                do {
                    try PathNormalizer.normalize(
                        UnsafeRawBufferPointer(rebasing: target[0..<end]), separators: separators, into: &normalized)
                } catch {
                    return "invalid_forwarded_uri"
                }
                if let path, path != normalized { return "ambiguous_forwarded_uri" }
                path = normalized
            } else if view.name(of: field, is: "x-forwarded-method") || view.name(of: field, is: "x-original-method") {
                if let method, !method.elementsEqual(value) { return "ambiguous_forwarded_method" }
                method = Array(value)
            } else if view.name(of: field, is: "x-forwarded-host") {
                if let host, !ForwardAuthRoute.sameHost(host, value) { return "ambiguous_forwarded_host" }
                host = value
            }
        }
        return nil
    }
}

private enum ASCIIFold {
    static func lower(_ c: UInt8) -> UInt8 { c >= 65 && c <= 90 ? c | 0x20 : c }
}
