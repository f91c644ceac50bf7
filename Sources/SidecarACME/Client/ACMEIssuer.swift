/// One certificate obtained from start to end (RFC 8555 §7.1's flow): account, order, each
/// authorization solved (or reused where the CA already holds it valid), finalization with a
/// CSR for a fresh key, the chain downloaded.
public struct ACMEIssuer {
    public let client: ACMEClient
    public let solver: ChallengeSolver
    /// Waits that long (the ACME thread's loop keeps serving challenge answers meanwhile).
    public let sleep: (_ milliseconds: Int64) -> Void
    /// How long an order may take from creation to the download before it is given up on.
    public var deadlineSeconds: Int64 = 300
    public var log: (String) -> Void = { _ in }

    public init(client: ACMEClient, solver: ChallengeSolver, sleep: @escaping (Int64) -> Void) {
        self.client = client
        self.solver = solver
        self.sleep = sleep
    }

    public struct Issued: Sendable {
        public let certificatePEM: String
        public let keyPEM: String
    }

    public func issue(
        domains: [String], keyType: CertificateKeyType, email: String?, binding: ExternalAccountBinding?,
        replaces: String?, now: () -> Int64
    ) throws(ACMEError) -> Issued {
        let started = now()
        if client.accountURL == nil {
            try client.register(contact: email, binding: binding)
            log("account: \(client.accountURL ?? "?")")
        }
        let (orderURL, created) = try client.newOrder(domains: domains, replaces: replaces)
        var order = created
        log("order created: \(orderURL)")
        if order.status == .ready {
            log("order ready at once: the CA reused valid authorizations for \(domains.joined(separator: ", "))")
        } else if order.status == .pending {
            for url in order.authorizations { try authorize(url, started: started, now: now) }
            order = try waitForOrder(orderURL, while: [.pending], started: started, now: now)
        }
        guard order.status == .ready else {
            throw ACMEError(.refused, "acme: order \(orderURL) is \(order.status.rawValue)"
                + (order.problem.map { ": \($0)" } ?? ""))
        }
        let keyPEM = try keyType.generatePEM()
        order = try client.finalize(order.finalize, csr: CertificateRequest.der(domains: domains, keyPEM: keyPEM))
        if order.status == .processing || order.status == .ready {
            order = try waitForOrder(orderURL, while: [.processing, .ready], started: started, now: now)
        }
        guard order.status == .valid, let certificateURL = order.certificate else {
            throw ACMEError(.refused, "acme: order \(orderURL) ended \(order.status.rawValue) without a certificate"
                + (order.problem.map { ": \($0)" } ?? ""))
        }
        let chain = try client.certificate(certificateURL)
        guard let summary = CertificateSummary(pem: chain, domains: domains), summary.namesEveryDomain else {
            throw ACMEError(.malformed, "acme: \(certificateURL): the certificate does not name \(domains.joined(separator: ", "))")
        }
        guard StoredCertificate(chainPEM: chain, keyPEM: keyPEM).keyMatches else {
            throw ACMEError(.malformed, "acme: \(certificateURL): the certificate is not for the key of the request")
        }
        return Issued(certificatePEM: chain, keyPEM: keyPEM)
    }

    /// A valid authorization is reused as is; a pending one gets its challenge presented,
    /// answered and polled until the CA decides.
    private func authorize(_ url: ACMEURL, started: Int64, now: () -> Int64) throws(ACMEError) {
        var (authorization, _) = try client.authorization(url)
        if authorization.status == .valid {
            log("authorization reused: \(authorization.domain)")
            return
        }
        guard authorization.status == .pending else {
            throw ACMEError(.refused, "acme: authorization for \(authorization.domain) is \(authorization.status.rawValue)")
        }
        guard let challenge = authorization.challenges.first(where: { $0.type == solver.challengeType }) else {
            throw ACMEError(.refused, "acme: the CA offers no \(solver.challengeType) challenge for \(authorization.domain)")
        }
        guard ACMEAuthorization.isValidToken(challenge.token) else {
            throw .malformed("the \(challenge.type) token is not base64url of at least 128 bits", url.text)
        }
        let domain = authorization.domain
        try solver.present(domain: domain, token: challenge.token,
                           keyAuthorization: client.keyAuthorization(token: challenge.token))
        defer { solver.withdraw(domain: domain, token: challenge.token) }
        try client.respond(to: challenge.url)
        var delay: Int64 = 500
        while authorization.status == .pending {
            try checkDeadline(started: started, now: now, what: "the authorization of \(domain)")
            sleep(delay)
            delay = min(delay * 2, 5_000)
            let retryAfter: Int?
            (authorization, retryAfter) = try client.authorization(url)
            if let retryAfter { delay = min(max(delay, Int64(retryAfter) * 1000), 30_000) }
        }
        guard authorization.status == .valid else {
            let problem = authorization.challenges.first(where: { $0.type == solver.challengeType })?.problem
            throw ACMEError(.refused, "acme: \(solver.challengeType) for \(domain) failed"
                + (problem.map { ": \($0)" } ?? " (\(authorization.status.rawValue))"))
        }
        log("authorization valid: \(domain)")
    }

    private func waitForOrder(
        _ url: ACMEURL, while waiting: Set<ACMEOrder.Status>, started: Int64, now: () -> Int64
    ) throws(ACMEError) -> ACMEOrder {
        var delay: Int64 = 500
        while true {
            let (order, retryAfter) = try client.order(url)
            guard waiting.contains(order.status) else { return order }
            try checkDeadline(started: started, now: now, what: "order \(url)")
            if let retryAfter { delay = min(max(delay, Int64(retryAfter) * 1000), 30_000) }
            sleep(delay)
            delay = min(delay * 2, 5_000)
        }
    }

    private func checkDeadline(started: Int64, now: () -> Int64, what: String) throws(ACMEError) {
        if now() - started > deadlineSeconds {
            throw ACMEError(.refused, "acme: \(what) took longer than \(deadlineSeconds) s")
        }
    }
}
