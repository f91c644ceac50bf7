/// One kind of challenge (RFC 8555 §8): HTTP-01 on the plain listener, TLS-ALPN-01 on the TLS
/// one. The issuer asks it to present the answer before telling the CA to look, and to
/// withdraw it once the authorization is decided.
public protocol ChallengeSolver: AnyObject {
    /// `http-01` or `tls-alpn-01`.
    var challengeType: String { get }
    func present(domain: String, token: String, keyAuthorization: String) throws(ACMEError)
    func withdraw(domain: String, token: String)
}
