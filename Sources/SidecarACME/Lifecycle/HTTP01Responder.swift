import SidecarEvent

/// HTTP-01 (RFC 8555 §8.3) on the plain listener `tls.acme.http_listen` (port 80): the key
/// authorization of each challenge in progress at `/.well-known/acme-challenge/<token>`,
/// before and instead of anything else (no rules, no sign-in); every other request is sent to
/// `public_url` over https. It runs on the ACME thread's loop, which serves while the issuer
/// waits, so the table needs no lock.
public final class HTTP01Responder: ChallengeSolver {
    public let challengeType = "http-01"
    private var answers: [String: String] = [:]
    private var server: ServiceServer?
    private let publicOrigin: String
    static let prefix = "/.well-known/acme-challenge/"
    /// With replicas sharing a Redis store: answers are written there too, and a token this
    /// replica does not hold is looked up there.
    var shared: RedisStorage?

    /// `fd`: the listening socket, bound at start (before the proxy serves: a port in use is a
    /// start failure, not a silent renewal failure weeks later).
    public init(loop: EventLoop, listeningFD fd: Int32, publicOrigin: String) {
        self.publicOrigin = publicOrigin
        var options = ServiceServer.Options()
        options.maxBodyBytes = 0
        options.keepAlive = false
        options.maxConnections = 256
        options.headerTimeoutMs = 5_000
        server = ServiceServer(loop: loop, listeningFD: fd, options: options) { [unowned self] request, respond in
            self.answer(request, respond)
        }
    }

    /// Stops listening and drops every connection (the thread that runs the loop is ending).
    public func close() {
        server?.close()
        server = nil
    }

    public func present(domain: String, token: String, keyAuthorization: String) throws(ACMEError) {
        answers[token] = keyAuthorization
        try shared?.putChallenge(token: token, keyAuthorization: keyAuthorization)
    }

    public func withdraw(domain: String, token: String) {
        answers[token] = nil
        shared?.removeChallenge(token: token)
    }

    func answer(_ request: ServiceRequest, _ respond: @escaping (ServiceResponse) -> Void) {
        let path = request.path
        guard path.hasPrefix(Self.prefix) else { return respond(redirect(request)) }
        let token = String(path.dropFirst(Self.prefix.count))
        guard request.head.method == .get || request.head.method == .head, ACMEAuthorization.isValidToken(token) else {
            return respond(.text(404, "no such challenge\n"))
        }
        if let answer = answers[token] { return respond(Self.keyAuthorization(answer)) }
        guard let shared else { return respond(.text(404, "no such challenge\n")) }
        shared.lookupChallenge(token: token) { answer in
            respond(answer.map(Self.keyAuthorization) ?? .text(404, "no such challenge\n"))
        }
    }

    private static func keyAuthorization(_ answer: String) -> ServiceResponse {
        ServiceResponse(status: 200, contentType: "application/octet-stream", body: answer,
                        headers: [("Cache-Control", "no-store")])
    }

    private func redirect(_ request: ServiceRequest) -> ServiceResponse {
        let path = request.path
        // Only the path and query are carried over: the Host header is the client's to forge.
        let target = path.hasPrefix("/") ? path + (request.query.map { "?" + $0 } ?? "") : "/"
        return ServiceResponse(status: 308, headers: [("Location", publicOrigin + target), ("Cache-Control", "no-store")])
    }
}
