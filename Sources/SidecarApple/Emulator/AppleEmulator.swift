import Logging
import SidecarCrypto
import SidecarEvent

/// A local stand-in for `appleid.apple.com`: the authorization page and its
/// `form_post`, the token endpoint with ES256 client-secret verification, the RS256 JWKS,
/// revocation, and test-control endpoints under `/emulator/`. Strict like Apple: it is the
/// test double relying parties are tested against.
///
/// Lives on one event loop: create it, `handle` requests and call `serve` on that loop's
/// thread only. `RunningEmulator` runs one on its own thread.
public final class AppleEmulator {
    public let options: EmulatorOptions
    public var logger = Logger(label: "sidecar.emulator")
    let loop: EventLoop
    let keys: EmulatorKeyRing
    let store = EmulatorStore()
    let minter: IDTokenMinter
    let secretVerifier: ClientSecretVerifier
    var users: [TestUser] {
        didSet { indexedUserTeams = [] }
    }
    /// App transfers between teams and their identifiers (`/auth/usermigrationinfo`).
    let transfers: EmulatorTransfers
    /// The teams whose subs of `users` `transfers` knows (a sending team names users by sub).
    var indexedUserTeams: Set<String> = []
    var autoApprove: TestUser?
    var faults: [EmulatorFault] = []
    /// The last token requests as the emulator saw them (field names, never secret values), for
    /// tests that check a relying party sends exactly what Apple expects.
    var tokenRequests: [JSONValue] = []
    static let keptTokenRequests = 50
    /// The last `/auth/revoke` requests (`GET /emulator/revocations`), without tokens.
    var revocations: [JSONValue] = []
    private var delayed: [ObjectIdentifier: Timer] = [:]
    /// What the console's last actions did, newest first (shown on the console).
    var consoleLog: [EmulatorConsole.Entry] = []

    public init(loop: EventLoop, options: EmulatorOptions) throws(EmulatorConfigurationError) {
        try options.validate()
        self.loop = loop
        self.options = options
        keys = try EmulatorKeyRing(directory: options.keyDirectory)
        minter = IDTokenMinter(issuer: options.issuer, lifetime: options.idTokenLifetime, keys: keys)
        secretVerifier = ClientSecretVerifier(teamID: options.teamID, audience: options.issuer,
                                              keys: options.clientKeys, leeway: options.clientSecretLeeway)
        users = options.users
        transfers = EmulatorTransfers(originalTeam: options.teamID)
        autoApprove = options.autoApprove
    }

    /// The published keys (what `GET /auth/keys` serves).
    public var keySet: JWKSet { keys.keySet }

    /// Serves the emulator on `address` (port 0: a free port, see `localAddress`).
    public func serve(address: SocketAddress, tls: ServiceTLSContext? = nil,
                      serverOptions: ServiceServer.Options = ServiceServer.Options()) throws(ServiceError) -> ServiceServer {
        try ServiceServer(loop: loop, address: address, tls: tls, options: serverOptions) { [unowned self] request, respond in
            self.handle(request, respond: respond)
        }
    }

    /// Serves the emulator on an already listening socket.
    public func serve(listeningFD fd: Int32, tls: ServiceTLSContext? = nil,
                      serverOptions: ServiceServer.Options = ServiceServer.Options()) -> ServiceServer {
        ServiceServer(loop: loop, listeningFD: fd, tls: tls, options: serverOptions) { [unowned self] request, respond in
            self.handle(request, respond: respond)
        }
    }

    /// Routes one request. `respond` is called on the loop, possibly later, or never (`hang`).
    public func handle(_ request: ServiceRequest, respond: @escaping (ServiceResponse) -> Void) {
        let path = request.path
        let method = request.method
        switch path {
        case "/auth/authorize":
            respond(allow(method, ["GET", "HEAD"]) ?? authorize(request))
        case AuthorizePages.consentPath:
            respond(allow(method, ["POST"]) ?? consent(request))
        case "/auth/token":
            if let refusal = allow(method, ["POST"]) { return respond(refusal) }
            token(request, respond: respond)
        case "/auth/keys":
            respond(allow(method, ["GET", "HEAD"]) ?? .json(200, keys.keySet.jsonText))
        case "/auth/revoke":
            respond(allow(method, ["POST"]) ?? revoke(request))
        case "/auth/usermigrationinfo":
            if let refusal = allow(method, ["POST"]) { return respond(refusal) }
            userMigrationInfo(request, respond: respond)
        case "/.well-known/openid-configuration":
            respond(allow(method, ["GET", "HEAD"]) ?? discovery())
        default:
            if path == "/emulator" || path.hasPrefix("/emulator/") {
                control(request, respond: respond)
            } else {
                respond(.text(404, "not found\n"))
            }
        }
    }

    private func allow(_ method: String, _ allowed: [String]) -> ServiceResponse? {
        guard !allowed.contains(method) else { return nil }
        var response = ServiceResponse.text(405, "method not allowed\n")
        response.headers.append(("Allow", allowed.joined(separator: ", ")))
        return response
    }

    /// Answers after `milliseconds` on the loop (the `slow:<ms>` fault).
    func delay(_ response: ServiceResponse, milliseconds: Int64, then respond: @escaping (ServiceResponse) -> Void) {
        var key: ObjectIdentifier?
        let timer = Timer(loop: loop) { [unowned self] in
            if let key { self.delayed[key] = nil }
            respond(response)
        }
        key = ObjectIdentifier(timer)
        delayed[ObjectIdentifier(timer)] = timer
        timer.schedule(afterMilliseconds: milliseconds)
    }

    private func discovery() -> ServiceResponse {
        let issuer = options.issuer
        let document: [String: JSONValue] = [
            "issuer": .string(issuer),
            "authorization_endpoint": .string(issuer + "/auth/authorize"),
            "token_endpoint": .string(issuer + "/auth/token"),
            "revocation_endpoint": .string(issuer + "/auth/revoke"),
            "jwks_uri": .string(issuer + "/auth/keys"),
            "response_types_supported": .array([.string("code"), .string("code id_token")]),
            "response_modes_supported": .array([.string("query"), .string("fragment"), .string("form_post")]),
            "subject_types_supported": .array([.string("pairwise")]),
            "id_token_signing_alg_values_supported": .array([.string("RS256")]),
            "scopes_supported": .array([.string("email"), .string("name")]),
            "token_endpoint_auth_methods_supported": .array([.string("client_secret_post")]),
            "claims_supported": .array(["aud", "email", "email_verified", "exp", "iat", "is_private_email", "iss",
                                        "nonce", "nonce_supported", "real_user_status", "sub", "transfer_sub"]
                                        .map { .string($0) }),
        ]
        return .json(200, JSONValue.object(document).jsonText)
    }
}
