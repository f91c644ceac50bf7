import Foundation

/// Apple's token endpoint answer. Every field is optional on the
/// wire; callers decide what they require (e.g. a missing id_token is Apple's fault → 502).
public struct TokenResponse: Equatable, Sendable {
    public var accessToken: String?
    public var tokenType: String?
    public var expiresIn: Int?
    public var refreshToken: String?
    public var idToken: String?

    public init(
        accessToken: String? = nil, tokenType: String? = nil, expiresIn: Int? = nil,
        refreshToken: String? = nil, idToken: String? = nil
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.idToken = idToken
    }

    /// `token_type` is `Bearer` in any letter case.
    public var isBearer: Bool { tokenType?.lowercased() == "bearer" }

    /// Parses a JSON object; nil when the body is not one. Fields of the wrong type are
    /// treated as absent.
    public init?(json body: [UInt8]) {
        guard let object = AppleJSON.object(body) else { return nil }
        accessToken = object["access_token"] as? String
        tokenType = object["token_type"] as? String
        expiresIn = AppleJSON.integer(object["expires_in"])
        refreshToken = object["refresh_token"] as? String
        idToken = object["id_token"] as? String
    }
}

/// Small JSON helpers over JSONSerialization (Apple calls are rare; not the request path).
enum AppleJSON {
    static func object(_ body: [UInt8]) -> [String: Any]? {
        guard !body.isEmpty,
              let value = try? JSONSerialization.jsonObject(with: Data(body), options: [])
        else { return nil }
        return value as? [String: Any]
    }

    /// An integral JSON number that fits an Int (a fraction or a string is not one).
    static func integer(_ value: Any?) -> Int? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.rounded() == double, abs(double) < 9.0e15 else { return nil }
        return Int(double)
    }

    /// `{"error": "...", "error_description": "..."}` → code and description.
    static func appleError(_ body: [UInt8]) -> (code: String, description: String?)? {
        guard let object = object(body), let code = object["error"] as? String, !code.isEmpty else {
            return nil
        }
        return (code, object["error_description"] as? String)
    }
}
