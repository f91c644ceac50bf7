import SidecarEvent

/// Where a browser says a request comes from (`Sec-Fetch-Site`, `Origin`), measured against the
/// emulator's own origin. The emulator's controls have no authentication, so this one rule keeps
/// a page on another site from driving them: the console's forms must prove they come from the
/// console, and the JSON control API refuses what a browser marks as coming from elsewhere.
enum RequestSite: Equatable {
    /// The emulator's own pages.
    case sameOrigin
    /// Neither header: curl, scripts and tests. Current browsers send at least one of them with
    /// every request that can change state, so this is not a page elsewhere.
    case undeclared
    /// Any other site. `same-site` counts too: another port or subdomain is another program.
    case crossSite

    /// `Sec-Fetch-Site` decides when present: the browser alone sets it, whereas `Origin` is
    /// `null` on the console's own forms (its pages send no referrer). Without it, `Origin`.
    init(_ request: ServiceRequest, ownOrigin: String) {
        if let fetchSite = request.header("sec-fetch-site")?.lowercased() {
            switch fetchSite {
            case "same-origin": self = .sameOrigin
            case "none": self = .undeclared  // typed or bookmarked by the user, not sent by a page
            default: self = .crossSite
            }
        } else if let origin = request.header("origin") {
            // `null` too: a sandboxed frame, a file, or a redirect from elsewhere.
            self = origin.lowercased() == ownOrigin ? .sameOrigin : .crossSite
        } else {
            self = .undeclared
        }
    }

    /// `scheme://host[:port]` of a URL, in lower case and without the scheme's default port: how
    /// browsers write `Origin`.
    static func origin(of url: String) -> String {
        let lower = url.lowercased()
        guard let schemeEnd = lower.range(of: "://") else { return lower }
        let scheme = lower[..<schemeEnd.lowerBound]
        var authority = lower[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let defaultPort = scheme == "https" ? ":443" : scheme == "http" ? ":80" : nil
        if let defaultPort, authority.hasSuffix(defaultPort) { authority = authority.dropLast(defaultPort.count) }
        return scheme + "://" + authority
    }
}

extension AppleEmulator {
    var ownOrigin: String { RequestSite.origin(of: options.issuer) }

    /// Why a state-changing control request is refused, or nil. A body must be declared JSON:
    /// a page elsewhere can send form or text bodies without asking, but JSON only after a CORS
    /// preflight the emulator never answers. A request without a body declares nothing.
    func controlRefusal(_ request: ServiceRequest) -> ServiceResponse? {
        if RequestSite(request, ownOrigin: ownOrigin) == .crossSite {
            return .json(403, Self.message("the control API refuses requests from other sites (Origin, Sec-Fetch-Site)"))
        }
        let declaredJSON = request.mediaType.map { $0 == "application/json" } ?? request.body.isEmpty
        guard declaredJSON else {
            return .json(415, Self.message("control requests with a body must be Content-Type: application/json"))
        }
        return nil
    }
}
