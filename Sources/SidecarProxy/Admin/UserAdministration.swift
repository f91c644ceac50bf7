import Logging
import SidecarCrypto
import SidecarEvent
import SidecarStore

/// The admin listener's users: `GET /users/<sub>` (what this replica knows of the user) and
/// `POST /users/<sub>/revoke` (every session and bearer token of the user issued up to now
/// ends, on every replica: the revocation by subject Apple's notifications make, through the
/// store; with `?apple=1` the user's kept refresh token is revoked at Apple first,
/// `OperatorAppleRevocation`). Every call, allowed or refused, is one audit line (`sidecar.audit`).
///
/// The path is read as sent, never decoded: a subject is Apple's `sub` alphabet (letters,
/// digits, `.`, `_`, `-`), so an encoded byte, a dot segment, an empty segment or a query
/// names no user and is a 404 before anything is decided.
final class UserAdministration {
    private let store: (any StoreBackend)?
    private let access: AdminAccess
    /// How long a subject's revocation is kept: the longest a session lives, plus the leeway.
    private let keepSeconds: Int64
    /// `?apple=1`; nil without sign-in.
    private let apple: OperatorAppleRevocation?
    private let logger = Logger(label: "sidecar.audit")

    static let pathPrefix = "/users/"

    init(store: (any StoreBackend)?, access: AdminAccess, keepSeconds: Int64, apple: OperatorAppleRevocation? = nil) {
        self.store = store
        self.apple = apple
        self.access = access
        self.keepSeconds = keepSeconds
        if access.isOff {
            logger.notice("admin /users/ endpoints off: admin.listen is not a loopback or unix: address and admin.token is not set")
        }
    }

    /// What a path under `/users/` asks for; nil: no such endpoint.
    enum Call: Equatable {
        case show(String)
        case revoke(String, apple: Bool)

        init?(path: String, query: String?) {
            guard query == nil || query == "apple=1", path.hasPrefix(UserAdministration.pathPrefix) else { return nil }
            let parts = path.dropFirst(UserAdministration.pathPrefix.count).split(
                separator: "/", omittingEmptySubsequences: false)
            guard let first = parts.first, let subject = UserAdministration.subject(first) else { return nil }
            switch parts.count {
            case 1 where query == nil: self = .show(subject)
            case 2 where parts[1] == "revoke": self = .revoke(subject, apple: query != nil)
            default: return nil
            }
        }

        var subject: String {
            switch self {
            case .show(let subject), .revoke(let subject, _): subject
            }
        }
        var method: String {
            switch self {
            case .show: "GET"
            case .revoke: "POST"
            }
        }
        var action: String {
            switch self {
            case .show: "show"
            case .revoke: "revoke"
            }
        }
    }

    /// Apple's `sub` is digits, hex and dots (`001234.0123abcd….1234`); the emulator's and
    /// other issuers' the same alphabet with `_` and `-`. At most 255 bytes, not only dots.
    static func subject(_ text: Substring) -> String? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 255, bytes.contains(where: { $0 != UInt8(ascii: ".") }),
              bytes.allSatisfy({ byte in
                  switch byte {
                  case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                       UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                      true
                  default: false
                  }
              })
        else { return nil }
        return String(text)
    }

    func answer(_ request: ServiceRequest, _ respond: @escaping (ServiceResponse) -> Void) {
        guard let call = Call(path: request.path, query: request.query) else {
            audit(request, call: nil, status: 404, outcome: "no_such_endpoint", allowed: false)
            return respond(Self.json(404, ["error": .string("not_found")]))
        }
        let method = request.method
        guard method == call.method || (call.method == "GET" && method == "HEAD") else {
            audit(request, call: call, status: 405, outcome: "method_not_allowed", allowed: false)
            var response = Self.json(405, ["error": .string("method_not_allowed")])
            response.headers.append(("Allow", call.method == "GET" ? "GET, HEAD" : "POST"))
            return respond(response)
        }
        switch access.verdict(for: request) {
        case .allowed:
            break
        case .unauthenticated:
            audit(request, call: call, status: 401, outcome: "unauthenticated", allowed: false)
            var response = Self.json(401, ["error": .string("unauthenticated")])
            response.headers.append(("WWW-Authenticate", "Bearer realm=\"sidecar-admin\""))
            return respond(response)
        case .off(let why):
            audit(request, call: call, status: 403, outcome: "off", allowed: false)
            return respond(Self.json(403, ["error": .string("users_endpoints_off"), "reason": .string(why)]))
        }
        guard let store else {
            audit(request, call: call, status: 404, outcome: "no_sign_in")
            return respond(Self.json(404, ["error": .string("sign_in_not_configured")]))
        }
        switch call {
        case .show(let subject):
            store.lastSignIn(subject) { [self] result in
                var body = Self.shown(subject, store: store)
                switch result {
                case .success(let signIn?):
                    body["last_sign_in"] = .object(["at_ms": .integer(signIn.atMs), "platform": .string(signIn.platform)])
                case .success(nil):
                    body["last_sign_in"] = .null
                    if !store.health.durable { body["last_sign_in_unknown"] = .string("the memory store forgets sign-ins on restart") }
                case .failure(let error):
                    body["last_sign_in"] = .null
                    body["last_sign_in_unknown"] = .string("the store could not be asked: \(error)")
                }
                // With users.keep_refresh_tokens: whether --apple would find a token to revoke.
                guard let apple, apple.isEnabled else {
                    audit(request, call: call, status: 200, outcome: "shown")
                    return respond(Self.json(200, body))
                }
                store.keptRefreshToken(subject) { [self] kept in
                    if case .success(let token) = kept {
                        body["refresh_token_kept_at_ms"] = token.map { .integer($0.atMs) } ?? .null
                    }
                    audit(request, call: call, status: 200, outcome: "shown")
                    respond(Self.json(200, body))
                }
            }
        case .revoke(let subject, apple: false):
            revokeLocally(subject, request, call, apple: nil, respond)
        case .revoke(let subject, apple: true):
            guard let apple, apple.isEnabled else {
                audit(request, call: call, status: 409, outcome: "refresh_tokens_not_kept")
                return respond(Self.json(409, [
                    "error": .string("refresh_tokens_not_kept"),
                    "reason": .string("set users.keep_refresh_tokens: true (with a file: or redis revocations.store): "
                        + "sign-ins then keep the refresh token that ?apple=1 revokes at Apple"),
                ]))
            }
            // Apple first: if it cannot be reached or refuses, nothing is revoked here and the
            // operator can retry (Apple answers 200 again for a token already revoked).
            apple.revoke(subject, store: store) { [self] outcome in
                switch outcome {
                case .failed(let reason):
                    audit(request, call: call, status: 502, outcome: "apple_failed", apple: outcome, error: reason)
                    respond(Self.json(502, [
                        "sub": .string(subject), "error": .string("apple_failed"), "apple": .string(outcome.label),
                        "reason": .string(reason),
                    ]))
                case .storeFailed(let error):
                    audit(request, call: call, status: 503, outcome: "store_failed", apple: outcome, error: error)
                    respond(Self.json(503, ["error": .string("store_unavailable")]))
                case .revoked, .noRefreshToken, .unreadable:
                    revokeLocally(subject, request, call, apple: outcome, respond)
                }
            }
        }
    }

    /// Every session of `subject` issued up to now ends, on every replica; `apple`: what the
    /// Apple side came to, reported beside it.
    private func revokeLocally(
        _ subject: String, _ request: ServiceRequest, _ call: Call, apple: OperatorAppleRevocation.Outcome?,
        _ respond: @escaping (ServiceResponse) -> Void
    ) {
        guard let store else { return }
        let nowMs = UnixTime.nowMs()
        store.revokeSubject(subject, issuedAtOrBeforeMs: nowMs, keepUntil: nowMs / 1000 + keepSeconds) {
            [self] result in
            switch result {
            case .success:
                audit(request, call: call, status: 200, outcome: "revoked", cutoffMs: nowMs, apple: apple)
                var body: [String: JSONValue] = ["sub": .string(subject), "revoked_before_ms": .integer(nowMs)]
                if let apple {
                    body["apple"] = .string(apple.label)
                    if case .revoked(let clientID) = apple { body["apple_client_id"] = .string(clientID) }
                }
                respond(Self.json(200, body))
            case .failure(let error):
                audit(request, call: call, status: 503, outcome: "store_failed", apple: apple, error: "\(error)")
                respond(Self.json(503, ["error": .string("store_unavailable")]))
            }
        }
    }

    /// What this replica knows of `subject`: its revocation cutoff, if one is kept.
    static func shown(_ subject: String, store: any StoreBackend) -> [String: JSONValue] {
        var body: [String: JSONValue] = ["sub": .string(subject), "store": .string(store.health.backend)]
        if let revocation = store.revocations.snapshot().subjects[subject] {
            body["revoked_before_ms"] = .integer(revocation.cutoffMs)
            body["revocation_kept_until"] = .integer(revocation.keepUntil)
        } else {
            body["revoked_before_ms"] = .null
        }
        return body
    }

    private func audit(
        _ request: ServiceRequest, call: Call?, status: Int, outcome: String, allowed: Bool = true,
        cutoffMs: Int64? = nil, apple: OperatorAppleRevocation.Outcome? = nil, error: String? = nil
    ) {
        var metadata: Logger.Metadata = [
            "audit": "admin", "method": "\(request.method)", "path": "\(Self.printable(request.path))",
            "peer": "\(request.peer)", "status": .stringConvertible(status), "outcome": "\(outcome)",
            "credential": "\(allowed ? (access.requiresToken ? "token" : "local") : "none")",
        ]
        if let call {
            metadata["action"] = "\(call.action)"
            metadata["sub"] = "\(call.subject)"
        }
        if let cutoffMs { metadata["revoked_before_ms"] = .stringConvertible(cutoffMs) }
        if let apple {
            metadata["apple"] = "\(apple.label)"
            if case .revoked(let clientID) = apple { metadata["apple_client_id"] = "\(clientID)" }
        }
        if let error { metadata["error"] = "\(error)" }
        if status >= 500 {
            logger.error("admin call", metadata: metadata)
        } else if status >= 400 {
            logger.warning("admin call", metadata: metadata)
        } else {
            logger.notice("admin call", metadata: metadata)
        }
    }

    /// At most 256 visible ASCII bytes of a path (an attacker's path is logged, not replayed).
    private static func printable(_ path: String) -> String {
        String(decoding: path.utf8.prefix(256).map { $0 > 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    private static func json(_ status: Int, _ members: [String: JSONValue]) -> ServiceResponse {
        ServiceResponse(status: status, contentType: "application/json", body: JSONValue.object(members).jsonText + "\n",
                        headers: [("Cache-Control", "no-store")])
    }
}
