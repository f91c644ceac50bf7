import Glibc
import SidecarACME
import SidecarApple
import SidecarConfig
import SidecarCrypto
import SidecarEvent

/// `sidecar check --online`: asks Apple what only Apple can say about a configuration that
/// loads. Its key set must be reachable, and each Services ID's client secret must be one Apple
/// accepts: a token request with a code that cannot exist is refused with `invalid_grant` when
/// the secret is good, `invalid_client` when the key id, team id, Services ID or key do not
/// belong together — the mistake that otherwise shows only as every sign-in failing.
struct OnlineCheck {
    struct Finding {
        let ok: Bool
        let line: String
    }

    let apple: Config.Apple
    let redirectURI: String

    func run() throws -> [Finding] {
        let loop = try EventLoop()
        let waiter = LoopWaiter(loop: loop)
        var base = apple.baseURL.description
        while base.hasSuffix("/") { base.removeLast() }
        let endpoint = try AppleEndpoint(baseURL: base, allowPlainHTTP: true)
        let api = AppleTokenAPI(client: try AppleHTTPClient(base: loop.base, configuration: AppleHTTPClient.Configuration(
            endpoint: endpoint, caFile: apple.caFile, connectTimeout: 5, totalTimeout: 15)))
        var findings: [Finding] = []

        let keys: Result<AppleHTTPResponse, AppleError> = waiter.wait { done in api.fetchJWKS(completion: done) }
        switch keys {
        case .success(let response):
            // Read as a sign-in reads it: a set with no usable key fails every sign-in too.
            if let set = try? JWKSet(json: response.body) {
                findings.append(Finding(ok: true, line: "apple keys: \(set.keyIDs.joined(separator: ", ")) from \(base)/auth/keys"))
            } else {
                findings.append(Finding(ok: false, line: "apple keys: \(base)/auth/keys answered without a usable RS256 key"))
            }
        case .failure(let error):
            findings.append(Finding(ok: false, line: "apple keys: \(base)/auth/keys: \(Self.describe(error)) — sign-ins fail until it answers"))
        }

        let key = try P256PrivateKey(pem: apple.privateKey.bytes)
        let secrets = try ClientSecretProvider(
            teamID: apple.teamID, keyID: apple.keyID, key: key, audience: base, lifetime: 300, clock: { Int64(time(nil)) })
        for clientID in apple.clientIDs.isEmpty ? [apple.clientID] : apple.clientIDs {
            let secret = try secrets.secret(forClientID: clientID)
            let answer: Result<TokenResponse, AppleError> = waiter.wait { done in
                api.exchangeCode(code: Self.probeCode, redirectURI: redirectURI, codeVerifier: nil, clientID: clientID,
                                 clientSecret: secret, completion: done)
            }
            findings.append(Self.verdict(answer, clientID: clientID, apple: apple))
        }
        return findings
    }

    /// A code Apple never issues: a valid secret can only get `invalid_grant` for it.
    static let probeCode = "sidecar-check-online-probe"

    static func verdict(_ answer: Result<TokenResponse, AppleError>, clientID: String, apple: Config.Apple) -> Finding {
        switch answer {
        case .failure(.rejected(.invalidGrant, _, _)):
            return Finding(ok: true, line: "client secret for \(clientID): accepted by Apple (key \(apple.keyID), team \(apple.teamID))")
        case .failure(.rejected(.invalidClient, _, _)):
            return Finding(ok: false, line: "client secret for \(clientID): refused by Apple (invalid_client): apple.key_id "
                + "\(apple.keyID), apple.team_id \(apple.teamID), apple.client_id \(clientID) and the key "
                + "(\(apple.privateKey.source)) must be a key of that team enabled for Sign in with Apple and its Services ID")
        case .failure(let error):
            return Finding(ok: false, line: "client secret for \(clientID): \(describe(error))")
        case .success:
            return Finding(ok: false, line: "client secret for \(clientID): Apple issued tokens for a code that cannot exist")
        }
    }

    private static func describe(_ error: AppleError) -> String {
        switch error {
        case .rejected(let code, let description, let status):
            "refused (\(code.code), HTTP \(status))" + (description.map { ": \($0)" } ?? "")
        default:
            "no answer (\(error.reason))"
        }
    }
}
