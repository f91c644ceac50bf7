import SidecarCrypto

/// The protocol steps of RFC 8555 against one CA, each a blocking call on the ACME thread:
/// the directory, nonces (a pool refilled from every answer's `Replay-Nonce`; a `badNonce`
/// refusal is retried with the fresh nonce it carries), the account (`jwk` until the CA names
/// it, `kid` after), orders, authorizations, challenges, finalization and the download.
public final class ACMEClient {
    public let directoryURL: ACMEURL
    public let accountKey: JWSSigningKey
    let transport: ACMETransport
    public private(set) var directory: ACMEDirectory?
    /// The account's URL once known (the `kid` of every later request).
    public var accountURL: String?
    private var nonces: [String] = []
    /// Told of each `badNonce` refusal that is retried (logged at debug level).
    public var onBadNonce: (String) -> Void = { _ in }
    /// `badNonce` answers in a row before the request is given up on (RFC 8555 §6.5: clients
    /// SHOULD retry; a CA refusing every nonce is broken, not unlucky).
    static let badNonceRetries = 8

    public init(directoryURL: ACMEURL, accountKey: JWSSigningKey, transport: ACMETransport) {
        self.directoryURL = directoryURL
        self.accountKey = accountKey
        self.transport = transport
    }

    /// The directory, fetched once per client.
    @discardableResult
    public func loadDirectory() throws(ACMEError) -> ACMEDirectory {
        if let directory { return directory }
        let response = try transport.get(directoryURL)
        try Self.expect(response, [200], directoryURL.text)
        let loaded = try ACMEDirectory(response.body, url: directoryURL.text)
        directory = loaded
        return loaded
    }

    // MARK: Requests

    /// POSTs a JWS of `payload` (nil: POST-as-GET) to `url`, signed with the account key under
    /// `jwk` (new-account) or `kid`, retrying a `badNonce` refusal.
    func post(_ url: ACMEURL, payload: JSONValue?, useJWK: Bool = false) throws(ACMEError) -> ACMEHTTPResponse {
        var attempt = 0
        while true {
            var header: [String: JSONValue] = ["nonce": .string(try nonce()), "url": .string(url.text)]
            if useJWK {
                header["jwk"] = accountKey.publicJWK
            } else {
                guard let accountURL else { throw ACMEError(.local, "acme: no account yet for \(url)") }
                header["kid"] = .string(accountURL)
            }
            let body: JSONValue
            do {
                body = try JWSFlattened.sign(
                    protected: header, payload: payload.map { Array($0.jsonText.utf8) }, key: accountKey)
            } catch {
                throw ACMEError(.local, "acme: signing a request failed: \(error)")
            }
            let response = try transport.post(url, jose: Array(body.jsonText.utf8))
            keepNonce(response)
            if response.status >= 400, let problem = ACMEProblem(response.body), problem.type == "badNonce",
               attempt < Self.badNonceRetries {
                attempt += 1
                onBadNonce(url.text)
                continue
            }
            return response
        }
    }

    private func nonce() throws(ACMEError) -> String {
        if let nonce = nonces.popLast() { return nonce }
        let newNonce = try loadDirectory().newNonce
        let response = try transport.get(newNonce)
        try Self.expect(response, [200, 204], newNonce.text)
        guard let nonce = response.header("Replay-Nonce"), Self.isValidNonce(nonce) else {
            throw .malformed("no valid Replay-Nonce", newNonce.text)
        }
        return nonce
    }

    private func keepNonce(_ response: ACMEHTTPResponse) {
        guard let nonce = response.header("Replay-Nonce"), Self.isValidNonce(nonce) else { return }
        // A handful is plenty: each request uses one and its answer brings the next.
        if nonces.count >= 8 { nonces.removeFirst() }
        nonces.append(nonce)
    }

    /// RFC 8555 §6.5.1: base64url, non-empty; bounded so a CA cannot grow our headers.
    static func isValidNonce(_ nonce: String) -> Bool {
        !nonce.isEmpty && nonce.utf8.count <= 256 && Base64URL.decode(nonce) != nil
    }

    /// Refuses an answer whose status is not one of `expected`, with the CA's problem when it
    /// sent one and its `Retry-After` (seconds or an HTTP date) for the schedule.
    static func expect(_ response: ACMEHTTPResponse, _ expected: Set<Int>, _ url: String) throws(ACMEError) {
        guard !expected.contains(response.status) else { return }
        let retryAfter = RetryAfterField.of(response)
        if let problem = ACMEProblem(response.body) {
            throw ACMEError(.problem(problem.type), "acme: \(url): \(response.status) \(problem.summary)",
                            retryAfterSeconds: retryAfter)
        }
        if (300..<400).contains(response.status) {
            throw ACMEError(.malformed, "acme: \(url): redirected (\(response.status)); ACME answers are never redirects",
                            retryAfterSeconds: retryAfter)
        }
        throw ACMEError(.malformed, "acme: \(url): unexpected status \(response.status)", retryAfterSeconds: retryAfter)
    }

    // MARK: Account

    /// Finds or creates the account of this key (RFC 8555 §7.3), agreeing to the terms of
    /// service, with an External Account Binding when the CA asks for one.
    public func register(contact email: String?, binding: ExternalAccountBinding?) throws(ACMEError) {
        let directory = try loadDirectory()
        if directory.externalAccountRequired, binding == nil {
            throw ACMEError(.refused, "acme: the CA requires external account binding: set tls.acme.eab_kid and eab_hmac_key")
        }
        var payload: [String: JSONValue] = ["termsOfServiceAgreed": .bool(true)]
        if let email { payload["contact"] = .array([.string("mailto:" + email)]) }
        if let binding { payload["externalAccountBinding"] = binding.jws(accountKey: accountKey, url: directory.newAccount) }
        let response = try post(directory.newAccount, payload: .object(payload), useJWK: true)
        try Self.expect(response, [200, 201], directory.newAccount.text)
        guard let location = response.header("Location"), ACMEURL(location) != nil else {
            throw .malformed("new account answered without a valid Location", directory.newAccount.text)
        }
        accountURL = location
    }

    // MARK: Orders

    /// A new order for `domains` (RFC 8555 §7.4); `replaces` is the ARI id of the certificate
    /// it renews (RFC 9773 §5), sent only to a CA that offers ARI.
    public func newOrder(domains: [String], replaces: String?) throws(ACMEError) -> (url: ACMEURL, order: ACMEOrder) {
        let directory = try loadDirectory()
        var payload: [String: JSONValue] = [
            "identifiers": .array(domains.map { .object(["type": .string("dns"), "value": .string($0)]) }),
        ]
        if let replaces, directory.renewalInfo != nil { payload["replaces"] = .string(replaces) }
        let response = try post(directory.newOrder, payload: .object(payload))
        try Self.expect(response, [201], directory.newOrder.text)
        guard let location = response.header("Location"), let url = ACMEURL(location) else {
            throw .malformed("new order answered without a valid Location", directory.newOrder.text)
        }
        return (url, try ACMEOrder(response.body, url: url.text))
    }

    public func order(_ url: ACMEURL) throws(ACMEError) -> (order: ACMEOrder, retryAfter: Int?) {
        let response = try post(url, payload: nil)
        try Self.expect(response, [200], url.text)
        return (try ACMEOrder(response.body, url: url.text), RetryAfterField.of(response))
    }

    public func authorization(_ url: ACMEURL) throws(ACMEError) -> (ACMEAuthorization, retryAfter: Int?) {
        let response = try post(url, payload: nil)
        try Self.expect(response, [200], url.text)
        return (try ACMEAuthorization(response.body, url: url.text),
                RetryAfterField.of(response))
    }

    /// Tells the CA the challenge is ready to be checked (RFC 8555 §7.5.1: an empty object).
    public func respond(to challenge: ACMEURL) throws(ACMEError) {
        let response = try post(challenge, payload: .object([:]))
        try Self.expect(response, [200], challenge.text)
    }

    public func finalize(_ url: ACMEURL, csr der: [UInt8]) throws(ACMEError) -> ACMEOrder {
        let response = try post(url, payload: .object(["csr": .string(Base64URL.encode(der))]))
        try Self.expect(response, [200], url.text)
        return try ACMEOrder(response.body, url: url.text)
    }

    /// The PEM chain, leaf first (RFC 8555 §7.4.2).
    public func certificate(_ url: ACMEURL) throws(ACMEError) -> String {
        let response = try post(url, payload: nil)
        try Self.expect(response, [200], url.text)
        let text = String(decoding: response.body, as: UTF8.self)
        guard text.hasPrefix("-----BEGIN CERTIFICATE-----") else {
            throw .malformed("the certificate is not a PEM chain", url.text)
        }
        return text
    }

    /// RFC 9773 §4: the CA's suggested renewal window; nil where it offers no ARI.
    public func renewalWindow(certificateID: String) throws(ACMEError) -> (window: ACMERenewalWindow, retryAfter: Int?)? {
        guard let base = try loadDirectory().renewalInfo else { return nil }
        let separator = base.text.hasSuffix("/") ? "" : "/"
        guard let url = ACMEURL(base.text + separator + certificateID) else { return nil }
        let response = try transport.get(url)
        try Self.expect(response, [200], url.text)
        return (try ACMERenewalWindow(response.body, url: url.text), RetryAfterField.of(response))
    }

    /// RFC 8555 §8.1: token || "." || base64url(JWK thumbprint of the account key).
    public func keyAuthorization(token: String) -> String { token + "." + accountKey.thumbprint }
}

/// An External Account Binding (RFC 8555 §7.3.4): the account's public key, MAC'd with the
/// key the CA issued out of band, under its key id.
public struct ExternalAccountBinding: Sendable {
    public let keyID: String
    public let macKey: [UInt8]

    public init(keyID: String, macKey: [UInt8]) {
        self.keyID = keyID
        self.macKey = macKey
    }

    func jws(accountKey: JWSSigningKey, url: ACMEURL) -> JSONValue {
        JWSFlattened.macHS256(
            protected: ["kid": .string(keyID), "url": .string(url.text)],
            payload: Array(accountKey.publicJWK.jsonText.utf8), key: macKey)
    }
}
