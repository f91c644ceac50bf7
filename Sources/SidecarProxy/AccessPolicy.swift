import Logging
import SidecarConfig
import SidecarHTTP

/// What happens to a request before anything reaches the upstream. The one
/// place where sidecar endpoints, public paths and the authenticator decide.
final class AccessPolicy {
    enum Decision {
        /// Forward upstream (identity headers stripped, then injected from the session), with
        /// the fields of the deciding rule's `set_headers` (`RuleHeaders`; 0: none).
        case forward(RuleHeaders.Group)
        /// Answer locally.
        case respond(LocalResponse)
        /// One of the sidecar's own endpoints: read the body, then let the authenticator answer.
        case endpoint(AuthEndpoint)
        /// Refused by a rule (`deny`, or a signed-in user its `allowed_*` do not admit): answer,
        /// and log which rule and why.
        case refuse(LocalResponse, rule: Int, reason: String)
    }

    private let prefix: [UInt8]
    private let publicPaths: PublicPaths
    private let apiPaths: PathGlobSet
    /// `access.api_paths` as written and folded, for the readings of a CORS preflight.
    private let apiPathReadings: PublicPaths
    /// The request path's sessions; nil without sign-in.
    private let sessions: SessionReader?
    /// `rules`, compiled for this configuration (a site's own, in a site's policy).
    let route: Route
    /// The policy of each site with rules of its own (`sites.<name>.rules`), nil for a site
    /// that keeps this one's: the requests of its hosts are decided there, so a configuration
    /// without them pays nothing for them.
    private let sitePolicies: [AccessPolicy?]
    /// Each site's own pages; nil when no site has any (then `pages` and `signInPage` are all).
    private let sitePages: SitePages?
    let pages: PageRenderer
    private let signInPage: Bool
    /// `{prefix}/check/<original path>` (Envoy's ext_authz).
    private let checkTarget: ForwardAuthTarget
    /// The shortest raw path of that form and its second byte: plain values, so that the
    /// paths of other requests are told apart without touching `checkTarget`'s arrays.
    private let checkTargetMinimum: Int
    private let checkTargetSecondByte: UInt8
    /// `sites`, nil without them (and in a site's policy, which its requests reach decided).
    let sites: SiteTable?
    /// Requests go to their site's upstream unless a rule names one.
    private let hasSites: Bool
    private let separators: EncodedSeparators
    /// Neither rules nor public paths: every request outside the prefix needs a session,
    /// whatever its readings.
    private let sessionAlwaysNeeded: Bool
    /// The lenient reading of the request being decided, when it differs from its path (the
    /// worker decides one request at a time; the capacity is kept).
    private var lenient: [UInt8] = []

    /// `siteRules`: for a site's policy, the site's rules in place of the top-level ones, list
    /// `ruleList` of `ruleHeaders` (every site's fields in one numbering, as the rewriter's).
    init(
        options: ProxyOptions, sessions: SessionReader?, siteRules: [Config.Rule]? = nil, ruleList: Int = 0,
        ruleHeaders: RuleHeaders? = nil
    ) {
        let ruleHeaders = ruleHeaders ?? RuleHeaders(options.config)
        self.sessions = sessions
        pages = options.pages
        sitePages = options.sitePages
        signInPage = options.config.pages.signIn
        var prefix = Array(options.config.routes.prefix.utf8)
        while prefix.last == UInt8(ascii: "/") { prefix.removeLast() }
        self.prefix = prefix
        checkTarget = ForwardAuthTarget(prefix: prefix, headers: options.config.headers)
        hasSites = !options.config.sites.isEmpty
        sites = !hasSites || siteRules != nil ? nil : SiteTable(options.config)
        checkTargetMinimum = prefix.isEmpty ? .max : prefix.count + "/check/".utf8.count
        checkTargetSecondByte = prefix.count > 1 ? prefix[1] : UInt8(ascii: "c")
        separators = options.encodedSlashes
        publicPaths = PublicPaths(options.config.access.publicPaths)
        apiPaths = PathGlobSet(options.config.access.apiPaths)
        apiPathReadings = PublicPaths(options.config.access.apiPaths)
        route = Route(siteRules ?? options.config.rules, upstreams: options.config.upstreams, headers: ruleHeaders,
                      list: ruleList)
        sitePolicies = siteRules != nil ? [] : options.config.sites.enumerated().map { index, site in
            site.rules.map {
                AccessPolicy(options: options, sessions: sessions, siteRules: $0, ruleList: 1 + index, ruleHeaders: ruleHeaders)
            }
        }
        sessionAlwaysNeeded = route.isEmpty && publicPaths.isEmpty
    }

    /// `identity` (reset by the caller) receives the session and what to strip; `view` is
    /// `head`'s borrowed bytes; `path` the normalized path; `upstream` the upstream of the rule that decided
    /// (left as it is, the top-level one, when none did).
    /// `trace`: the request's, whose span a session revalidation started here records its calls under.
    /// `site`: the site the request's host names (`sites`), left as it is without sites.
    func decide(
        _ head: HTTPRequestHead, _ view: HeadView, path: [UInt8], trace: TraceContext = TraceContext(),
        identity: inout RequestIdentity, upstream: inout Int, site: inout Int
    ) -> Decision {
        if let sites {
            guard let found = sites.site(forHost: (head.authority ?? head.host).map { view[$0] }) else {
                return .respond(localError(421, head, path: path))
            }
            upstream = sites.upstream(ofSite: found)
            site = found
            if let policy = sitePolicies[found] {
                return policy.decideOnSite(head, view, path: path, trace: trace, identity: &identity, upstream: &upstream)
            }
        }
        return decideOnSite(head, view, path: path, trace: trace, identity: &identity, upstream: &upstream)
    }

    /// `decide` once the site is known: this policy's rules decide.
    private func decideOnSite(
        _ head: HTTPRequestHead, _ view: HeadView, path: [UInt8], trace: TraceContext,
        identity: inout RequestIdentity, upstream: inout Int
    ) -> Decision {
        let rawPath = view[head.path]
        if rawPath.count >= checkTargetMinimum, rawPath[1] == checkTargetSecondByte,
           let original = checkTarget.original(of: rawPath) {
            guard sessions != nil else { return .respond(localError(404, head, path: path)) }
            return decideForwardAuth(head, view, original: original, trace: trace, identity: &identity, upstream: &upstream)
        }
        if isUnderPrefix(path) {
            guard sessions != nil else { return .respond(localError(404, head, path: path)) }
            switch AuthEndpoint.route(path[prefix.count...], method: head.method) {
            case .success(let endpoint): return .endpoint(endpoint)
            case .failure(.notFound): return .respond(localError(404, head, path: path))
            case .failure(.methodNotAllowed(let allow)):
                var answer = localError(405, head, path: path)
                answer.extraFields.append(("Allow", allow))
                return .respond(answer)
            }
        }
        return decideRequest(head, view, path: path, original: nil, trace: trace, identity: &identity, upstream: &upstream)
    }

    /// A request outside the prefix: forwarded, answered or refused. `original`: the path a
    /// forward-auth proxy asked about, for the sign-in's return address (nil: the request's own).
    @inline(__always) private func decideRequest(
        _ head: HTTPRequestHead, _ view: HeadView, path: [UInt8], original: UnsafeRawBufferPointer?,
        trace: TraceContext, identity: inout RequestIdentity, upstream: inout Int
    ) -> Decision {
        if head.method == .options, CORSPreflight.recognizes(head, view) {
            return preflight(head, view, path: path, upstream: &upstream)
        }
        guard !sessionAlwaysNeeded else {
            return authenticate(
                head, view, path: path, original: original, trace: trace, identity: &identity, verdict: RuleVerdict())
        }
        let verdict = verdict(head, view, path: path)
        if let rule = verdict.rule, !hasSites || route.action(rule).namesUpstream {
            upstream = route.action(rule).upstream
        }
        if let rule = verdict.deny {
            sessions?.noteCookie(view, into: &identity)
            return .refuse(forbidden(head, path: path, api: verdict.isAPI), rule: rule, reason: "deny")
        }
        if let rule = verdict.ambiguousHeaders {
            sessions?.noteCookie(view, into: &identity)
            return .refuse(localError(400, head, path: path), rule: rule, reason: "ambiguous_set_headers")
        }
        guard verdict.needsSession else {
            sessions?.noteCookie(view, into: &identity)
            return .forward(verdict.headers)
        }
        return authenticate(head, view, path: path, original: original, trace: trace, identity: &identity, verdict: verdict)
    }

    /// `{prefix}/check/<original path>` (Envoy's ext_authz): the original request decided as
    /// if it had come here, its path normalized on its own (a dot segment cannot climb out of
    /// it into the prefix), every copy of a forwarding field held to it (`ForwardedRequest`).
    /// What would be forwarded is answered 200 with the identity headers and the headers
    /// Envoy must remove; everything else is answered as the request itself would be (the
    /// redirect to sign in, 401, 403).
    private func decideForwardAuth(
        _ head: HTTPRequestHead, _ view: HeadView, original: UnsafeRawBufferPointer, trace: TraceContext,
        identity: inout RequestIdentity, upstream: inout Int
    ) -> Decision {
        var normalized: [UInt8] = []
        do {
            try PathNormalizer.normalize(original, separators: separators, into: &normalized)
        } catch {
            return .respond(.plain(400))
        }
        var forwarded = ForwardedRequest(
            path: normalized, method: Array(view[head.methodRange]), host: (head.authority ?? head.host).map { view[$0] })
        if let reason = forwarded.read(view, separators: separators) {
            Logger(label: "sidecar").info(
                "forward-auth request refused", metadata: ["reason": .string(reason), "endpoint": "check"])
            return .respond(AuthPages.json(403, .object(["error": .string("forbidden")])))
        }
        // A request for the sidecar's own endpoints is routed to them unchecked; one that is
        // asked about came in a spelling the proxy sent elsewhere (`/x/../.auth/me`).
        if isUnderPrefix(normalized) {
            Logger(label: "sidecar").info(
                "forward-auth request refused", metadata: ["reason": "sidecar_path", "endpoint": "check"])
            return .respond(AuthPages.json(403, .object(["error": .string("forbidden")])))
        }
        let decision = decideRequest(
            head, view, path: normalized, original: original, trace: trace, identity: &identity, upstream: &upstream)
        guard case .forward(let headers) = decision else { return decision }
        var answer = LocalResponse(status: 200, reason: "OK", body: [])
        answer.identity = identity.opened
        if let cookie = identity.setCookie { answer.extraFields.append(("Set-Cookie", cookie)) }
        answer.ruleHeaders = (route.headers, headers)
        answer.extraFields.append((
            "X-Envoy-Auth-Headers-To-Remove",
            checkTarget.removals(for: identity, view: view, ruleHeaders: route.headers, setting: headers)))
        return .respond(answer)
    }

    /// A CORS preflight: forwarded without identity where every reading admits it
    /// (`Route.admitsPreflight`), otherwise decided as any request (no session: 401).
    private func preflight(
        _ head: HTTPRequestHead, _ view: HeadView, path: [UInt8], upstream: inout Int
    ) -> Decision {
        let verdict = verdict(head, view, path: path)
        if let rule = verdict.rule, !hasSites || route.action(rule).namesUpstream {
            upstream = route.action(rule).upstream
        }
        if let rule = verdict.deny {
            return .refuse(forbidden(head, path: path, api: verdict.isAPI), rule: rule, reason: "deny")
        }
        if let rule = verdict.ambiguousHeaders {
            return .refuse(localError(400, head, path: path), rule: rule, reason: "ambiguous_set_headers")
        }
        guard verdict.needsSession else { return .forward(verdict.headers) }
        let host = (head.authority ?? head.host).map { view[$0] }
        var lenientReading: [UInt8] = []
        path.withUnsafeBytes { LenientPath.append($0, into: &lenientReading) }
        let admitted = path.withUnsafeBytes { pathBytes in
            lenientReading.withUnsafeBytes { lenientBytes in
                let readings = RequestReadings(path: pathBytes, lenient: lenientBytes, method: .options, host: host)
                return route.admitsPreflight(readings, publicPaths: publicPaths, apiPaths: apiPathReadings)
            }
        }
        guard admitted else { return .respond(unauthenticated(head, path: path, api: true)) }
        return .forward(verdict.headers)
    }

    /// Every reading of the request, judged by the rules and public paths.
    private func verdict(_ head: HTTPRequestHead, _ view: HeadView, path: [UInt8]) -> RuleVerdict {
        // The host the upstream is told (an absolute-form target's authority takes the place
        // of Host, as `RequestRewriter` forwards it) is the host a rule is matched on.
        let host = (head.authority ?? head.host).map { view[$0] }
        let overrides = route.methodsMatter ? Self.methodOverrides(view) : HTTPMethodSet()
        return path.withUnsafeBytes { pathBytes in
            let folding = route.foldingMatters || publicPaths.foldingMatters
            guard folding || !LenientPath.isSame(pathBytes) else {
                let readings = RequestReadings(path: pathBytes, lenient: nil, method: head.method, overrides: overrides, host: host)
                return route.verdict(readings, publicPaths: publicPaths)
            }
            lenient.removeAll(keepingCapacity: true)
            LenientPath.append(pathBytes, into: &lenient)
            return lenient.withUnsafeBytes { lenientBytes in
                let readings = RequestReadings(
                    path: pathBytes, lenient: lenientBytes, method: head.method, overrides: overrides, host: host)
                return route.verdict(readings, publicPaths: publicPaths)
            }
        }
    }

    /// The methods a request's override fields name (Express's method-override, Laravel,
    /// Symfony and ASP.NET run the request as that method).
    static func methodOverrides(_ view: HeadView) -> HTTPMethodSet {
        var methods = HTTPMethodSet()
        for field in view.fields
        where view.name(of: field, is: "x-http-method-override") || view.name(of: field, is: "x-http-method")
            || view.name(of: field, is: "x-method-override") {
            methods.insertOverrides(view[field.value])
        }
        return methods
    }

    /// A session is required: without one the request is answered (a redirect, the sign-in
    /// page, 401); with one, each restricting rule of `verdict` must admit its user.
    private func authenticate(
        _ head: HTTPRequestHead, _ view: HeadView, path: [UInt8], original: UnsafeRawBufferPointer?, trace: TraceContext,
        identity: inout RequestIdentity, verdict: RuleVerdict
    ) -> Decision {
        if let sessions {
            sessions.identify(view, host: head.authority ?? head.host, trace: trace, into: &identity)
            if identity.isAuthenticated {
                guard verdict.restricting.count > 0, let session = identity.session else { return .forward(verdict.headers) }
                guard let (rule, reason) = route.refusal(
                    verdict, subject: session.subject, email: session.email, privateEmail: session.privateEmail) else {
                    return .forward(verdict.headers)
                }
                return .refuse(forbidden(head, path: path, api: verdict.isAPI), rule: rule, reason: reason)
            }
        }
        return .respond(unauthenticated(head, path: path, original: original, api: verdict.isAPI))
    }

    /// 403 for a request a rule refuses: the forbidden page (its link signs in again, perhaps
    /// as someone else), or JSON for API clients.
    func forbidden(_ head: HTTPRequestHead, path: [UInt8], api: Bool) -> LocalResponse {
        if api || isAPIClient(head, path: path) {
            return AuthPages.json(403, .object(["error": .string("forbidden")]))
        }
        return pages(for: head).renderer.ruleRefused(loginURL: prefix + Array("/login".utf8), for: head)
    }

    private func isUnderPrefix(_ path: [UInt8]) -> Bool {
        guard !prefix.isEmpty, path.count >= prefix.count, path.starts(with: prefix) else { return false }
        return path.count == prefix.count || path[prefix.count] == UInt8(ascii: "/")
    }

    /// A status the proxy answers itself: the error page for browsers, one plain line for
    /// API clients (a program reads the status, not a page).
    func localError(_ status: Int, _ head: HTTPRequestHead, path: [UInt8]) -> LocalResponse {
        isAPIClient(head, path: path) ? .plain(status) : pages(for: head).renderer.proxyError(status, for: head)
    }

    /// The pages of `head`'s site, and whether its browsers without a session get the sign-in page.
    private func pages(for head: HTTPRequestHead) -> (renderer: PageRenderer, signIn: Bool) {
        sitePages?.pages(for: head) ?? (pages, signInPage)
    }

    /// The rules that decide requests for `host`: its site's, else the top-level ones.
    func route(forHost host: UnsafeRawBufferPointer?) -> Route {
        guard let sites, let site = sites.site(forHost: host), let policy = sitePolicies[site] else { return route }
        return policy.route
    }

    /// Browsers are redirected (GET/HEAD), or with `pages.sign_in` get the sign-in
    /// page, or (other methods) the sign-in-required page; API clients get 401 JSON with a
    /// Bearer challenge.
    private func unauthenticated(
        _ head: HTTPRequestHead, path: [UInt8], original: UnsafeRawBufferPointer? = nil, api: Bool = false
    ) -> LocalResponse {
        let login = prefix + Array("/login".utf8)
        if api || isAPIClient(head, path: path) {
            var body = Array("{\"error\":\"unauthenticated\",\"login\":\"".utf8)
            body += login
            body += Array("\"}".utf8)
            return LocalResponse(
                status: 401, reason: "Unauthorized", contentType: "application/json", body: body,
                extraFields: [("WWW-Authenticate", Array("Bearer realm=\"sidecar\"".utf8))])
        }
        var location = login + Array("?rd=".utf8)
        if let original {
            PercentEncoding.append(original, keepingSlashes: true, into: &location)
        } else {
            PercentEncoding.append(head.bytes(head.path.isEmpty ? head.target : head.path), keepingSlashes: true, into: &location)
        }
        if let query = head.query {
            location += Array("%3F".utf8)
            PercentEncoding.append(head.bytes(query), keepingSlashes: true, into: &location)
        }
        let pages = pages(for: head)
        guard head.method == .get || head.method == .head else {
            return pages.renderer.unauthorized(loginURL: location, for: head)
        }
        if pages.signIn { return pages.renderer.signIn(loginURL: location, for: head) }
        return LocalResponse(
            status: 302, reason: "Found", contentType: "text/html; charset=utf-8",
            body: Array("<!doctype html><a href=\"".utf8) + location + Array("\">Sign in</a>\n".utf8),
            extraFields: [("Location", location), ("Content-Security-Policy", AuthPages.redirectPolicy)])
    }

    /// API client: matches api_paths, sends Authorization or X-Requested-With: XMLHttpRequest,
    /// or does not accept text/html.
    func isAPIClient(_ head: HTTPRequestHead, path: [UInt8]) -> Bool {
        if !apiPaths.isEmpty, path.withUnsafeBytes({ apiPaths.matches($0) }) { return true }
        if head.firstValue("authorization") != nil { return true }
        if let xrw = head.firstValue("x-requested-with"),
           asciiEqualIgnoringCase(head.bytes(xrw), Array("xmlhttprequest".utf8)[...]) {
            return true
        }
        let html = Array("text/html".utf8)
        for accept in head.values("accept") {
            let value = head.bytes(accept)
            if value.count >= html.count {
                var i = value.startIndex
                while i + html.count <= value.endIndex {
                    if asciiEqualIgnoringCase(value[i..<i + html.count], html[...]) { return false }
                    i += 1
                }
            }
        }
        return true
    }

}

/// `a` equals the lower-case ASCII `lower`, ignoring the case of letters in `a`.
func asciiEqualIgnoringCase(_ a: ArraySlice<UInt8>, _ lower: ArraySlice<UInt8>) -> Bool {
    guard a.count == lower.count else { return false }
    var j = lower.startIndex
    for x in a {
        let folded = x >= UInt8(ascii: "A") && x <= UInt8(ascii: "Z") ? x | 0x20 : x
        if folded != lower[j] { return false }
        j += 1
    }
    return true
}
