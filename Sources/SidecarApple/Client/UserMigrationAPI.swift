/// Apple's user-migration endpoint for an app moving to another team (TN3159), over an
/// `AppleHTTPClient`: a client-credentials access token (`scope=user.migration`), then
/// `POST /auth/usermigrationinfo` per user — by the sending team (`sub` + `target` →
/// `transfer_sub`) and by the recipient once the app is theirs (`transfer_sub` → the new
/// `sub`, and a private relay user's new address). Completions run once on the client's loop.
public final class UserMigrationAPI {
    public let client: AppleHTTPClient

    public init(client: AppleHTTPClient) {
        self.client = client
    }

    /// What the recipient team learns of one transferred user.
    public struct MigratedUser: Equatable, Sendable {
        public var subject: String
        /// The new private relay address; nil for a user who shared their own (it is unchanged).
        public var email: String?
        public var isPrivateEmail: Bool
    }

    /// An access token for `usermigrationinfo` and its lifetime in seconds.
    public func accessToken(
        clientID: String, clientSecret: String, completion: @escaping (Result<(String, Int), AppleError>) -> Void
    ) {
        let request = AppleHTTPRequest.form(path: "/auth/token", fields: [
            ("grant_type", "client_credentials"), ("scope", "user.migration"), ("client_id", clientID),
            ("client_secret", clientSecret),
        ])
        client.send(request) { result in
            completion(AppleTokenAPI.classify(result).flatMap { response in
                guard let token = TokenResponse(json: response.body), token.isBearer, let access = token.accessToken,
                      !access.isEmpty
                else { return .failure(.invalidResponse(status: response.status)) }
                return .success((access, token.expiresIn ?? 3_600))
            })
        }
    }

    /// The sending team: the user's `transfer_sub` for the recipient team `target`.
    public func transferSubject(
        of subject: String, target: String, accessToken: String, clientID: String, clientSecret: String,
        completion: @escaping (Result<String, AppleError>) -> Void
    ) {
        send([("sub", subject), ("target", target), ("client_id", clientID), ("client_secret", clientSecret)],
             accessToken: accessToken) { result in
            completion(result.flatMap { object, status in
                guard let value = object["transfer_sub"] as? String, Self.isIdentifier(value) else {
                    return .failure(.invalidResponse(status: status))
                }
                return .success(value)
            })
        }
    }

    /// The recipient team: the user a `transfer_sub` stands for, in this team.
    public func exchange(
        _ transferSubject: String, accessToken: String, clientID: String, clientSecret: String,
        completion: @escaping (Result<MigratedUser, AppleError>) -> Void
    ) {
        send([("transfer_sub", transferSubject), ("client_id", clientID), ("client_secret", clientSecret)],
             accessToken: accessToken) { result in
            completion(result.flatMap { object, status in
                guard let subject = object["sub"] as? String, Self.isIdentifier(subject) else {
                    return .failure(.invalidResponse(status: status))
                }
                let email = object["email"] as? String
                let isPrivate = (object["is_private_email"] as? Bool) ?? ((object["is_private_email"] as? String) == "true")
                return .success(MigratedUser(subject: subject, email: email, isPrivateEmail: isPrivate))
            })
        }
    }

    private func send(
        _ fields: [(String, String)], accessToken: String,
        completion: @escaping (Result<([String: Any], Int), AppleError>) -> Void
    ) {
        var request = AppleHTTPRequest.form(path: "/auth/usermigrationinfo", fields: fields)
        request.bearerToken = accessToken
        client.send(request) { result in
            completion(AppleTokenAPI.classify(result).flatMap { response in
                guard let object = AppleJSON.object(response.body) else { return .failure(.invalidResponse(status: response.status)) }
                return .success((object, response.status))
            })
        }
    }

    /// Apple's user identifiers: visible ASCII without separators a CSV or a header would read.
    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 255
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "\"") }
    }
}
