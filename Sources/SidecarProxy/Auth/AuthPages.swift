import SidecarCrypto
import SidecarHTTP

/// The sidecar's own small pages and JSON answers for the sign-in endpoints.
enum AuthPages {
    /// A failed sign-in: the error page with a link to start again, or JSON for API clients.
    static func failure(
        _ failure: LoginFailure, json: Bool, loginPath: String, pages: PageRenderer, for head: HTTPRequestHead
    ) -> LocalResponse {
        if json {
            return Self.json(failure.status, .object([
                "error": .string(failure.publicCode), "reason": .string(failure.reason), "login": .string(loginPath),
            ]))
        }
        return pages.loginFailure(failure, loginURL: Array(loginPath.utf8), for: head)
    }

    /// 503: the store could not record what the request needed (never an answer
    /// that would be untrue after a restart, never an unchecked acceptance).
    static func storeUnavailable(json: Bool, loginPath: String, pages: PageRenderer, for head: HTTPRequestHead)
        -> LocalResponse {
        if json { return Self.json(503, .object(["error": .string("store_unavailable")])) }
        return pages.storeUnavailable(loginURL: Array(loginPath.utf8), for: head)
    }

    static func json(_ status: Int, _ value: JSONValue) -> LocalResponse {
        LocalResponse(
            status: status, reason: reasonPhrase(status), contentType: "application/json",
            body: Array(value.jsonText.utf8))
    }

    /// 302/303 with a tiny HTML body linking to `location`.
    static func redirect(_ status: Int, to location: String) -> LocalResponse {
        LocalResponse(
            status: status, reason: status == 303 ? "See Other" : "Found", contentType: "text/html; charset=utf-8",
            body: Array("<!doctype html><a href=\"\(HTML.escape(location))\">Continue</a>\n".utf8),
            extraFields: [("Location", Array(location.utf8)), ("Content-Security-Policy", redirectPolicy)])
    }

    /// A redirect's body is never shown, so it may do nothing at all.
    static let redirectPolicy = Array("default-src 'none'; frame-ancestors 'none'".utf8)

    static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 302: "Found"
        case 303: "See Other"
        case 403: "Forbidden"
        case 405: "Method Not Allowed"
        case 500: "Internal Server Error"
        default: LocalResponse.describe(status).0
        }
    }

}
