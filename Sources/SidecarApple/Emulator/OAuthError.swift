import SidecarCrypto
import SidecarEvent

/// An OAuth error as Apple answers it: HTTP 400 (unless said otherwise) with `{"error": …}`
/// and sometimes an `error_description`.
struct OAuthError: Error, Equatable {
    var code: String
    var description: String?
    var status = 400

    init(_ code: String, _ description: String? = nil) {
        self.code = code
        self.description = description
    }

    static func invalidRequest(_ why: String? = nil) -> OAuthError { OAuthError("invalid_request", why) }

    var response: ServiceResponse {
        var body: [String: JSONValue] = ["error": .string(code)]
        if let description { body["error_description"] = .string(description) }
        return .json(status, JSONValue.object(body).jsonText)
    }
}
