import SidecarEvent
import SidecarHTTP

/// HTTPS client to Apple's endpoints on one libevent loop (the caller's worker loop).
///
/// Not thread-safe by design: create one per `event_base` and use it only on that loop's
/// thread. Every request gets a fresh connection (`Connection: close`), full certificate and
/// host-name verification, and one deadline covering DNS, connect, TLS, request and response.
/// The completion runs exactly once, on the loop thread, never from inside `send`.
public final class AppleHTTPClient {
    public struct Configuration: Sendable {
        public var endpoint: AppleEndpoint
        /// Extra trust anchors (PEM) besides the system store (`apple.ca_file`).
        public var caFile: String?
        /// Limit for DNS + TCP connect + TLS handshake, in seconds.
        public var connectTimeout: Double
        /// Limit for the whole exchange, in seconds.
        public var totalTimeout: Double
        public var maxBodyBytes: Int
        public var maxHeadBytes: Int
        public var userAgent: String
        /// Name servers come from this file; loopback and literal hosts never use DNS.
        public var resolvConfPath: String

        public init(
            endpoint: AppleEndpoint, caFile: String? = nil, connectTimeout: Double = 5,
            totalTimeout: Double = 10, maxBodyBytes: Int = 1 << 20, maxHeadBytes: Int = 16 << 10,
            userAgent: String = AppleHTTPClient.defaultUserAgent,
            resolvConfPath: String = "/etc/resolv.conf"
        ) {
            self.endpoint = endpoint
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.totalTimeout = totalTimeout
            self.maxBodyBytes = maxBodyBytes
            self.maxHeadBytes = maxHeadBytes
            self.userAgent = userAgent
            self.resolvConfPath = resolvConfPath
        }
    }

    public enum SetupError: Error, Equatable, Sendable {
        case tlsContextCreation
        case caFileUnreadable(String)
    }

    /// The sidecar's version (one constant for the CLI, the proxy and this User-Agent).
    public static let version = SidecarVersion.version
    public static let defaultUserAgent = "siwa-sidecar/\(version)"

    public let configuration: Configuration
    let base: OpaquePointer
    let tls: TLSClientContext?
    private var dns: Resolver?

    /// - Parameter base: the `event_base` every request of this client runs on.
    public init(base: OpaquePointer, configuration: Configuration) throws(SetupError) {
        self.base = base
        self.configuration = configuration
        if configuration.endpoint.scheme == .https {
            do {
                tls = try TLSClientContext(caFile: configuration.caFile)
            } catch {
                switch error {
                case .tlsContextCreation: throw .tlsContextCreation
                case .caFileUnreadable(let path): throw .caFileUnreadable(path)
                }
            }
        } else {
            tls = nil
        }
    }

    /// Sends `request` to the configured endpoint; `completion` runs once on the loop thread.
    public func send(_ request: AppleHTTPRequest, completion: @escaping (AppleHTTPResult) -> Void) {
        let exchange = AppleHTTPExchange(
            client: self, requestBytes: serialize(request), completion: completion)
        exchange.start()
    }

    /// The resolver, created on first use so that loopback and literal hosts never touch DNS.
    func resolver() -> Resolver? {
        if let dns { return dns }
        dns = Resolver(base: base, resolvConfPath: configuration.resolvConfPath)
        return dns
    }

    private func serialize(_ request: AppleHTTPRequest) -> [UInt8] {
        let endpoint = configuration.endpoint
        let target = Self.oneLine(endpoint.basePath + request.path, percentEncode: true)
        var head = "\(request.method.rawValue) \(target) HTTP/1.1\r\n"
        head += "Host: \(endpoint.hostHeader)\r\n"
        head += "User-Agent: \(Self.oneLine(configuration.userAgent, percentEncode: false))\r\n"
        head += "Accept: application/json\r\n"
        head += "Connection: close\r\n"
        if let token = request.bearerToken { head += "Authorization: Bearer \(Self.oneLine(token, percentEncode: false))\r\n" }
        if let contentType = request.contentType, !request.body.isEmpty || request.method == .POST {
            head += "Content-Type: \(contentType)\r\n"
        }
        if request.method == .POST || !request.body.isEmpty {
            head += "Content-Length: \(request.body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + request.body
    }

    /// Keeps header and request-line text on one line: bytes outside visible ASCII (and SP
    /// for the user agent) are percent-encoded in a target, dropped from a header value.
    private static func oneLine(_ text: String, percentEncode: Bool) -> String {
        var out: [UInt8] = []
        for byte in text.utf8 {
            let visible = byte > 0x20 && byte < 0x7F
            if visible || (!percentEncode && byte == 0x20) {
                out.append(byte)
            } else if percentEncode {
                PercentEncoding.appendEscape(byte, to: &out)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
