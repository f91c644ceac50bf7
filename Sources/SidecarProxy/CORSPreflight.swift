import SidecarHTTP

/// A CORS preflight as a browser sends it (the Fetch standard's CORS-preflight request): the
/// question a cross-origin page asks before a request with credentials or a non-simple method
/// or header. The browser never sends credentials with it, so requiring a session would fail
/// every such page; the upstream owns its CORS policy and answers it, without identity.
///
/// Anything a browser's preflight would not be is not one, and is decided as any other
/// request (it needs a session): so what is forwarded without a session carries no
/// credentials, no body and no method an upstream could run instead of OPTIONS.
enum CORSPreflight {
    /// `head` is an OPTIONS request with exactly one non-empty `Origin`, exactly one
    /// `Access-Control-Request-Method` naming a method token, and none of: `Cookie`,
    /// `Authorization`, a method-override field (`X-HTTP-Method-Override`, `X-HTTP-Method`,
    /// `X-Method-Override`: Express and Laravel would run the request as that method), a body,
    /// an upgrade.
    static func recognizes(_ head: HTTPRequestHead, _ view: HeadView) -> Bool {
        guard head.method == .options, head.targetForm != .asterisk, !head.connection.upgrade else { return false }
        switch head.framing {
        case .none, .contentLength(0): break
        default: return false
        }
        var origins = 0
        var requestMethods = 0
        for field in view.fields {
            if view.name(of: field, is: "origin") {
                guard view[field.value].count > 0 else { return false }
                origins += 1
            } else if view.name(of: field, is: "access-control-request-method") {
                guard isToken(view[field.value]) else { return false }
                requestMethods += 1
            } else if view.name(of: field, is: "cookie") || view.name(of: field, is: "authorization")
                || view.name(of: field, is: "x-http-method-override") || view.name(of: field, is: "x-http-method")
                || view.name(of: field, is: "x-method-override")
            {
                return false
            }
        }
        return origins == 1 && requestMethods == 1
    }

    /// RFC 9110's token: a method name.
    private static func isToken(_ value: UnsafeRawBufferPointer) -> Bool {
        guard !value.isEmpty else { return false }
        for c in value {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"),
                 UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
                 UInt8(ascii: "|"), UInt8(ascii: "~"):
                continue
            default:
                return false
            }
        }
        return true
    }
}
