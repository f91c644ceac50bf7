import SidecarCrypto
import SidecarHTTP

/// The sidecar's own small pages and JSON answers for the sign-in endpoints.
enum AuthPages {
    /// A failed sign-in: a short HTML page with a link to start again, or JSON for API clients.
    static func failure(_ failure: LoginFailure, json: Bool, loginPath: String) -> LocalResponse {
        let reason = reasonPhrase(failure.status)
        if json {
            let body = JSONValue.object([
                "error": .string(failure.publicCode), "reason": .string(failure.reason),
                "login": .string(loginPath),
            ]).jsonText
            return LocalResponse(
                status: failure.status, reason: reason, contentType: "application/json",
                body: Array(body.utf8))
        }
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in failed</title></head>
            <body><h1>\(HTML.escape(failure.headline))</h1><p>\(HTML.escape(failure.advice))</p>
            <p><a href="\(HTML.escape(loginPath))">Try again</a></p><p><small>Reason: \(HTML.escape(failure.reason))</small></p>
            </body></html>

            """
        return LocalResponse(
            status: failure.status, reason: reason, contentType: "text/html; charset=utf-8",
            body: Array(html.utf8))
    }

    /// 503: the store could not record what the request needed (SPEC §6: never an answer
    /// that would be untrue after a restart, never an unchecked acceptance).
    static func storeUnavailable(json: Bool) -> LocalResponse {
        if json { return Self.json(503, .object(["error": .string("store_unavailable")])) }
        return LocalResponse(
            status: 503, reason: reasonPhrase(503), contentType: "text/html; charset=utf-8",
            body: Array("""
                <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Try again</title></head>
                <body><h1>Please try again</h1><p>The sign-in service could not record this step. Nothing was changed; try again in a moment.</p>
                <p><small>Reason: store_unavailable</small></p></body></html>

                """.utf8))
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
            extraFields: [("Location", Array(location.utf8))])
    }

    static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 302: "Found"
        case 303: "See Other"
        case 403: "Forbidden"
        case 500: "Internal Server Error"
        default: LocalResponse.describe(status).0
        }
    }

}
