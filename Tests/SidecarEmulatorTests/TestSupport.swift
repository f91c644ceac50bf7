import CEvent
import Glibc
import Synchronization
import XCTest
@testable import SidecarApple
import SidecarCrypto
import SidecarEvent

/// A controllable clock for the emulator.
final class TestClock: Sendable {
    private let value: Atomic<Int64>
    init(_ start: Int64 = Int64(time(nil))) { value = Atomic(start) }
    var now: Int64 { value.load(ordering: .relaxed) }
    func advance(_ seconds: Int64) { value.add(seconds, ordering: .relaxed) }
}

/// A parsed HTTP response from `RawHTTP`.
struct HTTPReply {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var json: JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(body)) }
    var error: String? { json?.objectValue?["error"]?.stringValue }
}

enum RawHTTPError: Error { case connect, timeout, malformed }

/// A tiny blocking HTTP/1.1 client over a real socket (one request per connection unless raw).
/// `timeoutSeconds` bounds each read: the emulator answers at once, and the default 5 s
/// covers a loaded 2-core machine.
enum RawHTTP {
    static func connect(_ address: SocketAddress, timeoutSeconds: Int = 5) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connect }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard rc == 0 else { close(fd); throw RawHTTPError.connect }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads one response (Content-Length framed) from `fd`, keeping extra bytes in `pending`.
    static func readResponse(_ fd: Int32, pending: inout [UInt8], headRequest: Bool = false) throws -> HTTPReply {
        func fill() throws {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 { throw RawHTTPError.timeout }
            if n == 0 { throw RawHTTPError.malformed }
            pending.append(contentsOf: chunk[0..<n])
        }
        var headEnd: Int?
        while headEnd == nil {
            if let range = find(pending, Array("\r\n\r\n".utf8)) { headEnd = range } else { try fill() }
        }
        let head = String(decoding: pending[0..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw RawHTTPError.malformed }
        let headers = lines.map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : "")
        }
        let length = headRequest ? 0 : Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
        let bodyStart = headEnd! + 4
        while pending.count < bodyStart + length { try fill() }
        let body = Array(pending[bodyStart..<(bodyStart + length)])
        pending.removeFirst(bodyStart + length)
        if status == 100 { return try readResponse(fd, pending: &pending) }
        return HTTPReply(status: status, headers: headers, body: body)
    }

    static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where Array(haystack[i..<(i + needle.count)]) == needle { return i }
        return nil
    }

    static func request(_ address: SocketAddress, _ method: String, _ target: String,
                        headers: [(String, String)] = [], body: [UInt8] = [], timeoutSeconds: Int = 5) throws -> HTTPReply {
        let fd = try connect(address, timeoutSeconds: timeoutSeconds)
        defer { close(fd) }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(address)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        send(fd, Array(head.utf8) + body)
        var pending: [UInt8] = []
        return try readResponse(fd, pending: &pending, headRequest: method == "HEAD")
    }
}

/// Form encoding for test requests.
func formBody(_ pairs: [(String, String)]) -> [UInt8] {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return Array(pairs.map { "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed)!)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
        .joined(separator: "&").utf8)
}

/// The hidden fields of a form page, HTML entities decoded.
func hiddenFields(_ html: String) -> [String: String] {
    var fields: [String: String] = [:]
    let pattern = try! NSRegularExpression(pattern: "<input type=\"hidden\" name=\"([^\"]*)\" value=\"([^\"]*)\">")
    for match in pattern.matches(in: html, range: NSRange(html.startIndex..., in: html)) {
        let name = String(html[Range(match.range(at: 1), in: html)!])
        let value = String(html[Range(match.range(at: 2), in: html)!])
        fields[unescapeHTML(name)] = unescapeHTML(value)
    }
    return fields
}

func unescapeHTML(_ text: String) -> String {
    text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
        .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
        .replacingOccurrences(of: "&amp;", with: "&")
}

/// An emulator on its own thread with one web client, one native client and one client key.
final class EmulatorFixture {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let webClient = "com.example.web"
    static let otherClient = "com.example.other"
    static let nativeClient = "com.example.app"
    static let redirect = "https://app.example.com/.auth/callback"

    let clock = TestClock()
    let clientKey: P256PrivateKey
    let running: RunningEmulator
    var address: SocketAddress { running.address }
    var issuer: String { running.issuer }

    init(autoApprove: TestUser? = TestUser(email: "maria@example.com", firstName: "Maria", lastName: "Ruiz"),
         allowNotifyToAnyHost: Bool = false) throws {
        clientKey = try P256PrivateKey.generate()
        let clock = self.clock
        var options = EmulatorOptions(
            issuer: "", teamID: Self.teamID,
            clients: [
                EmulatorClient(id: Self.webClient, redirectURIs: [Self.redirect, "http://localhost:8080/.auth/callback"]),
                EmulatorClient(id: Self.otherClient, redirectURIs: ["https://other.example.com/cb"]),
                EmulatorClient(id: Self.nativeClient, redirectURIs: []),
            ],
            clientKeys: [Self.keyID: clientKey.publicKey], autoApprove: autoApprove,
            clock: { clock.now })
        options.users = EmulatorOptions.defaultUsers
        options.allowNotifyToAnyHost = allowNotifyToAnyHost
        running = try RunningEmulator.start(options: options, listen: try SocketAddress(parsing: "127.0.0.1:0"))
    }

    deinit { running.stop() }

    func secret(client: String = EmulatorFixture.webClient, issuedAt: Int64? = nil, lifetime: Int64 = 3600,
                audience: String? = nil, team: String = EmulatorFixture.teamID, keyID: String = EmulatorFixture.keyID,
                key: P256PrivateKey? = nil) throws -> String {
        try AppleClientSecret.mint(teamID: team, clientID: client, keyID: keyID, key: key ?? clientKey,
                                   audience: audience ?? issuer, issuedAt: issuedAt ?? clock.now, lifetime: lifetime)
    }

    func get(_ target: String) throws -> HTTPReply { try RawHTTP.request(address, "GET", target) }

    func postForm(_ path: String, _ pairs: [(String, String)]) throws -> HTTPReply {
        try RawHTTP.request(address, "POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                            body: formBody(pairs))
    }

    func postJSON(_ path: String, _ json: String) throws -> HTTPReply {
        try RawHTTP.request(address, "POST", path, headers: [("Content-Type", "application/json")], body: Array(json.utf8))
    }

    static func pkce() -> (verifier: String, challenge: String) {
        let verifier = Base64URL.encode((try? SecureRandom.bytes(32)) ?? [])
        return (verifier, Base64URL.encode(SHA256.hash(Array(verifier.utf8))))
    }

    /// Runs an auto-approved authorization and returns the form_post fields.
    func authorize(client: String = EmulatorFixture.webClient, redirect: String = EmulatorFixture.redirect,
                   responseType: String = "code", scope: String = "name%20email", nonce: String? = "n-0S6_WzA2Mj",
                   challenge: String? = nil, extra: String = "") throws -> [String: String] {
        var query = "client_id=\(client)&redirect_uri=\(redirect.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            + "&response_type=\(responseType.replacingOccurrences(of: " ", with: "%20"))&response_mode=form_post&state=st4te"
        if !scope.isEmpty { query += "&scope=\(scope)" }
        if let nonce { query += "&nonce=\(nonce)" }
        if let challenge { query += "&code_challenge=\(challenge)&code_challenge_method=S256" }
        let reply = try get("/auth/authorize?" + query + extra)
        XCTAssertEqual(reply.status, 200, reply.text)
        return hiddenFields(reply.text)
    }

    func exchange(code: String, client: String = EmulatorFixture.webClient, redirect: String? = EmulatorFixture.redirect,
                  verifier: String? = nil, secret: String? = nil) throws -> HTTPReply {
        var pairs = [("grant_type", "authorization_code"), ("code", code), ("client_id", client),
                     ("client_secret", try secret ?? self.secret(client: client))]
        if let redirect { pairs.append(("redirect_uri", redirect)) }
        if let verifier { pairs.append(("code_verifier", verifier)) }
        return try postForm("/auth/token", pairs)
    }

    func keys() throws -> JWKSet { try JWKSet(json: try get("/auth/keys").body) }

    func verify(_ idToken: String, nonce: NonceExpectation = .oneOf(["n-0S6_WzA2Mj"]),
                audience: String = EmulatorFixture.webClient) throws -> AppleIdentity {
        try AppleIDTokenVerifier(issuer: issuer, audiences: [audience])
            .verify(idToken, keys: try keys(), now: clock.now, nonce: nonce)
    }
}
