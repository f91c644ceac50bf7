// Documentation, not built: an iOS/macOS app signing in through the sidecar
// (Docs/native-apps.md explains each step).
//
//   GET  /.auth/native/nonce     → {"nonce", "expires_at"}       (single use, 10 minutes)
//   Sign in with Apple on the device, with that nonce
//   POST /.auth/native           → {"token", "expires_at", "user"}
//   Authorization: Bearer <token> on every API call (the sidecar removes it before the app's
//   server sees the request, and adds X-Auth-User-Id, X-Auth-Email, … instead)
//   POST /.auth/native/refresh   before expires_at → a new token, same session
//   POST /.auth/logout           with the bearer → 204 (also revokes Apple's refresh token)
//
// sidecar.yaml: apple.native_audiences: [<this app's bundle id>] (and, recommended,
// apple.native_require_nonce: true). Keep the token in the Keychain, not in UserDefaults.
import AuthenticationServices
import Foundation

struct SidecarSession: Decodable {
    struct User: Decodable { let id: String; let email: String?; let name: String? }
    let token: String
    /// When this token stops working unless refreshed (Unix seconds).
    let expires_at: Int64
    let user: User
}

@MainActor
final class SidecarSignIn: NSObject, ASAuthorizationControllerDelegate,
    ASAuthorizationControllerPresentationContextProviding
{
    private let base: URL  // e.g. https://app.example.com (public_url)
    private let anchor: ASPresentationAnchor
    private var pending: CheckedContinuation<ASAuthorizationAppleIDCredential, Error>?

    init(base: URL, anchor: ASPresentationAnchor) {
        self.base = base
        self.anchor = anchor
    }

    func signIn() async throws -> SidecarSession {
        // 1. A nonce from the sidecar: it makes the identity token single use.
        struct Nonce: Decodable { let nonce: String }
        let (data, _) = try await URLSession.shared.data(from: base.appending(path: ".auth/native/nonce"))
        let nonce = try JSONDecoder().decode(Nonce.self, from: data).nonce

        // 2. Sign in with Apple, carrying that nonce (as is; its SHA-256 hex works too).
        let request = ASAuthorizationAppleIDProvider().createRequest()
        request.requestedScopes = [.fullName, .email]
        request.nonce = nonce
        let credential = try await authorize(request)
        guard let identityToken = credential.identityToken.flatMap({ String(data: $0, encoding: .utf8) }) else {
            throw URLError(.userAuthenticationRequired)
        }

        // 3. Hand it to the sidecar. Apple sends the name on the first sign-in only: send it then.
        var body: [String: String] = ["identityToken": identityToken, "nonce": nonce]
        if let code = credential.authorizationCode.flatMap({ String(data: $0, encoding: .utf8) }) {
            body["authorizationCode"] = code  // lets the sidecar keep Apple's refresh token
        }
        if let given = credential.fullName?.givenName { body["firstName"] = given }
        if let family = credential.fullName?.familyName { body["lastName"] = family }
        return try await post(".auth/native", json: body, bearer: nil)
    }

    /// Call before `expires_at` (e.g. when the app comes to the foreground).
    func refresh(_ session: SidecarSession) async throws -> SidecarSession {
        try await post(".auth/native/refresh", json: [:], bearer: session.token)
    }

    /// Any call to the app's API: the bearer is the session.
    func authorized(_ request: URLRequest, _ session: SidecarSession) -> URLRequest {
        var request = request
        request.setValue("Bearer \(session.token)", forHTTPHeaderField: "Authorization")
        return request
    }

    private func post<T: Decodable>(_ path: String, json: [String: String], bearer: String?) async throws -> T {
        var request = URLRequest(url: base.appending(path: path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONEncoder().encode(json)
        let (data, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            // {"error": "<reason>"}: e.g. nonce_replayed, token_expired, policy_denied_email
            throw URLError(.userAuthenticationRequired)
        }
        return try JSONDecoder().decode(T.self, from: data)
    }

    private func authorize(_ request: ASAuthorizationAppleIDRequest) async throws -> ASAuthorizationAppleIDCredential {
        try await withCheckedThrowingContinuation { continuation in
            pending = continuation
            let controller = ASAuthorizationController(authorizationRequests: [request])
            controller.delegate = self
            controller.presentationContextProvider = self
            controller.performRequests()
        }
    }

    func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {
        if let credential = authorization.credential as? ASAuthorizationAppleIDCredential {
            pending?.resume(returning: credential)
        } else {
            pending?.resume(throwing: URLError(.userAuthenticationRequired))
        }
        pending = nil
    }

    func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: Error) {
        pending?.resume(throwing: error)
        pending = nil
    }

    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor { anchor }
}
