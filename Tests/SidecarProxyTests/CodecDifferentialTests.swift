import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarHTTP2
import XCTest

@testable import SidecarProxy

/// The two codecs are one request model: any request expressible in both HTTP/1.1 and HTTP/2
/// gets the same refusal or the same head, the same path reading, the same decision (rules,
/// public paths, method overrides, hosts, the sign-in redirect) and the same forwarded head.
/// Thousands of requests drawn from the spellings that broke proxies before (encoded and
/// doubled separators, case, `;params`, trailing dots, overrides, forged identity fields,
/// cookie crumbs, odd bytes in values), each built both ways.
final class CodecDifferentialTests: XCTestCase {
    private static let secret = Base64.encode([UInt8](repeating: 0x21, count: 32))

    private struct Request {
        var method: String
        var target: String
        var host: String
        var fields: [(String, String)]
        var cookies: [String]
    }

    /// A small deterministic generator (SplitMix64): the same requests on every run.
    private struct Draw {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }
        mutating func chance(_ percent: UInt64) -> Bool { next() % 100 < percent }
    }

    private static let segments = [
        "admin", "ADMIN", "Admin", "open", "OPEN", "internal", "api", "static", "x", "..", ".", "%2e%2e", "%2E",
        "admin;jsessionid=1", "admin.", "admin%20", "open;x", "%2F", "%5C", "a%2Fb", "", "..;", "%61dmin", "%00",
        "%zz", "caf%C3%A9", "~user", "a b",
    ]
    private static let methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PURGE", "get"]
    private static let hosts = ["app.example.com", "APP.example.com.", "admin.example.com", "evil.example", "a b", "app.example.com:443"]
    private static let extraFields: [(String, String)] = [
        ("x-http-method-override", "DELETE"), ("x-http-method", "put, GET"), ("x-method-override", "PURGE"),
        ("x-auth-user-id", "forged"), ("x-auth_email", "forged@example.com"), ("x-forwarded-for", "10.0.0.1"),
        ("forwarded", "for=1.2.3.4"), ("x-original-url", "/admin"), ("x-request-id", "abc.DEF-123"),
        ("x-request-id", "bad id!"), ("accept", "text/html"), ("accept", "application/json"), ("content-length", "0"),
        ("user-agent", "differential/1.0"), ("x-odd", "tab\there"), ("x-odd", "bell\u{7}"), ("x-obs", "caf\u{e9}"),
        ("authorization", "Bearer not-a-token"), ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        ("content-length", "00"), ("expect", "100-continue"), ("x-forwarded-prefix", "/evil"),
    ]

    private func draw(_ d: inout Draw) -> Request {
        var path = d.chance(50) ? d.pick(["/open", "/static", "/open/a.css"]) : ""  // public: forwarded
        for _ in 0..<(1 + Int(d.next() % 4)) { path += "/" + d.pick(Self.segments) }
        if d.chance(10) { path += "/" }
        if d.chance(10) { path = "/" + path }
        var target = path
        if d.chance(25) { target += "?" + d.pick(["a=1", "next=/admin", "x=%2F", "", "q=a+b&code=secret"]) }
        var fields: [(String, String)] = []
        for _ in 0..<Int(d.next() % 5) { fields.append(d.pick(Self.extraFields)) }
        var cookies: [String] = []
        for _ in 0..<Int(d.next() % 3) { cookies.append(d.pick(["a=1", "theme=dark", "__Host-session=garbage", "x=y=z"])) }
        return Request(method: d.pick(Self.methods), target: target, host: d.pick(Self.hosts), fields: fields, cookies: cookies)
    }

    /// HTTP/1.1 text in the order the HTTP/2 side builds its head: Host first, cookies joined last.
    private func http1(_ r: Request) -> Result<HTTPRequestHead, HTTPHeadError>? {
        var text = "\(r.method) \(r.target) HTTP/1.1\r\nhost: \(r.host)\r\n"
        for (name, value) in r.fields { text += "\(name): \(value)\r\n" }
        if !r.cookies.isEmpty { text += "cookie: \(r.cookies.joined(separator: "; "))\r\n" }
        text += "\r\n"
        do throws(HTTPHeadError) {
            guard let head = try HTTPRequestHead.parse(Array(text.utf8)) else { return nil }
            return .success(head)
        } catch {
            return .failure(error)
        }
    }

    private func http2(_ r: Request) -> Result<HTTPRequestHead, HTTPHeadError>? {
        var builder = H2RequestHead(maxBytes: 64 * 1024)
        var arrays = HeadArrays()
        builder.reset(reusing: &arrays)
        var list = [(":method", r.method), (":scheme", "https"), (":authority", r.host), (":path", r.target)]
        list += r.fields
        list += r.cookies.map { ("cookie", $0) }
        for (name, value) in list {
            _ = Array(name.utf8).withUnsafeBytes { n in Array(value.utf8).withUnsafeBytes { v in builder.add(name: n, value: v) } }
        }
        do throws(H2RequestHead.Failure) {
            switch try builder.finish(bodyFollows: false) {
            case .request(let head): return .success(head)
            case .refused(let error): return .failure(error)
            }
        } catch {
            return nil  // malformed for HTTP/2 itself (a stream error), nothing to compare
        }
    }

    /// What the sidecar does with a head: the path's reading, the decision, the forwarded head.
    private func outcome(_ head: HTTPRequestHead, policy: AccessPolicy, rewriter: RequestRewriter) -> String {
        head.withView { view in
            var path: [UInt8] = []
            do throws(PathNormalizationError) {
                try PathNormalizer.normalize(view[head.path], separators: .reject, into: &path)
            } catch {
                return "400 path \(error)"
            }
            var identity = RequestIdentity()
            var upstream = 0, site = -1
            switch policy.decide(head, view, path: path, identity: &identity, upstream: &upstream, site: &site) {
            case .respond(let answer):
                return "respond \(answer.status) \(String(decoding: answer.body, as: UTF8.self)) \(answer.extraFields.map { "\($0.name)=\(String(decoding: $0.value, as: UTF8.self))" })"
            case .refuse(let answer, let rule, let reason):
                return "refuse \(answer.status) rule \(rule) \(reason)"
            case .endpoint(let endpoint):
                return "endpoint \(endpoint)"
            case .forward:
                guard let queue = ByteQueue.allocate() else { return "no memory" }
                defer { queue.deallocate() }
                let written = rewriter.write(
                    head, view, upstream: upstream, normalizedPath: path, peerText: Array("192.0.2.7".utf8),
                    peerTrusted: false, requestId: Array("rid".utf8), trace: TraceContext(), identity: identity, to: queue)
                return "forward \(upstream) \(written)\n" + String(decoding: queue.removeAll(), as: UTF8.self)
            }
        }
    }

    func testEveryRequestExpressibleInBothProtocolsIsOneRequest() throws {
        let config = try AuthTestConfig.parse(
            secret: Self.secret, publicURL: "https://app.example.com",
            extra: """
                access:
                  public_paths: [/open/**, /static/*.css]
                rules:
                  - path: /admin/**
                    methods: [GET, POST]
                    host: admin.example.com
                    allowed_emails: [boss@example.com]
                  - path: /internal/**
                    deny: true
                  - path: /api/**
                    api: true
                  - path: /static/**
                    public: true
                    methods: [GET, HEAD]

                """)
        var options = ProxyOptions(config: config)
        let settings = try AuthSettings(config: config, shared: AuthShared())
        options.auth = settings
        let auth = try AuthTestConfig.authenticator(settings)
        let policy = AccessPolicy(options: options, sessions: auth.sessions)
        let rewriter = RequestRewriter(options: options)

        var d = Draw(state: 0x5EED)
        var compared = 0, refusedAlike = 0, forwarded = 0
        for _ in 0..<4_000 {
            let request = draw(&d)
            guard let one = http1(request), let two = http2(request) else { continue }
            switch (one, two) {
            case (.failure(let a), .failure(let b)):
                XCTAssertEqual(a.status, b.status, "\(request)")
                refusedAlike += 1
            case (.success(let a), .success(let b)):
                let first = outcome(a, policy: policy, rewriter: rewriter)
                let second = outcome(b, policy: policy, rewriter: rewriter)
                XCTAssertEqual(first, second, "\(request)")
                if first.hasPrefix("forward") { forwarded += 1 }
            default:
                let describe = { (r: Result<HTTPRequestHead, HTTPHeadError>) in (try? r.get()).map { _ in "taken" } ?? "refused" }
                XCTFail("one codec refused what the other took: \(request) → HTTP/1.1 \(describe(one)), HTTP/2 \(describe(two))")
            }
            compared += 1
        }
        // The draw reaches every kind of outcome, or the comparison proves little.
        XCTAssertGreaterThan(compared, 3_000)
        XCTAssertGreaterThan(refusedAlike, 100)
        XCTAssertGreaterThan(forwarded, 300)
        print("codec differential: \(compared) requests compared, \(refusedAlike) refused alike, \(forwarded) forwarded")
    }
}
