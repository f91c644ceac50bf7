import SidecarACME
import SidecarHTTPClient
import SidecarCrypto

/// A CA that answers from a script: each request gets the next answer for its URL (the last
/// one repeated), and every request is recorded. No sockets: the JSON and JWS handling is
/// what is under test.
final class ScriptedCA: ACMETransport {
    struct Sent {
        let method: String
        let url: String
        let body: [UInt8]
    }

    var answers: [String: [ACMEHTTPResponse]] = [:]
    var sent: [Sent] = []
    var failure: ACMEError?
    private var nonceCounter = 0

    static let base = "https://ca.test"

    func on(_ path: String, _ responses: ACMEHTTPResponse...) { answers[Self.base + path] = responses }

    func get(_ url: ACMEURL) throws(ACMEError) -> ACMEHTTPResponse {
        try answer("GET", url, [])
    }

    func post(_ url: ACMEURL, jose body: [UInt8]) throws(ACMEError) -> ACMEHTTPResponse {
        try answer("POST", url, body)
    }

    private func answer(_ method: String, _ url: ACMEURL, _ body: [UInt8]) throws(ACMEError) -> ACMEHTTPResponse {
        sent.append(Sent(method: method, url: url.text, body: body))
        if let failure { throw failure }
        guard var queue = answers[url.text], let first = queue.first else {
            return ACMEHTTPResponse(status: 404, headers: [], body: [])
        }
        if queue.count > 1 { queue.removeFirst() }
        answers[url.text] = queue
        nonceCounter += 1
        var headers = first.headers
        if !headers.contains(where: { $0.name == "Replay-Nonce" }) { headers.append(("Replay-Nonce", Base64URL.encode(Array("nonce-\(nonceCounter)".utf8)))) }
        return ACMEHTTPResponse(status: first.status, headers: headers, body: first.body)
    }

    static func json(_ status: Int, _ text: String, _ headers: [(String, String)] = []) -> ACMEHTTPResponse {
        ACMEHTTPResponse(status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(text.utf8))
    }

    static let directory = json(200, """
        {"newNonce":"\(base)/nonce","newAccount":"\(base)/account","newOrder":"\(base)/order",
         "meta":{"termsOfService":"\(base)/tos"}}
        """)

    /// A CA with a directory, nonces and an account.
    static func standard() -> ScriptedCA {
        let ca = ScriptedCA()
        ca.on("/dir", directory)
        ca.on("/nonce", json(204, ""))
        ca.on("/account", json(201, #"{"status":"valid"}"#, [("Location", base + "/acct/1")]))
        return ca
    }
}
