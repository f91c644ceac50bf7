import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP

/// Who may call the admin listener's `/users/…` endpoints, which sign users out: with
/// `admin.token`, a caller presenting it as a bearer token; without one, anyone who can reach
/// a loopback or unix-socket listener (the host's own processes), and nobody on any other
/// address — a listener opened to a network for its probes never signs users out for the
/// network without a token.
struct AdminAccess {
    enum Verdict: Equatable {
        case allowed
        /// No token, or not the configured one: 401.
        case unauthenticated
        /// The endpoints are off on this listener (why, for the answer).
        case off(String)
    }

    private enum Mode {
        case token([UInt8])
        case localOnly
        case off
    }

    private let mode: Mode

    init(token: Secret?, listener: SocketAddress?) {
        if let token {
            mode = .token(token.bytes)
        } else if let listener, Self.isLocal(listener) {
            mode = .localOnly
        } else {
            mode = .off
        }
    }

    /// Whether anything may call the endpoints at all (for the start-up log).
    var isOff: Bool {
        if case .off = mode { return true }
        return false
    }

    /// Whether a token is required (for the start-up log).
    var requiresToken: Bool {
        if case .token = mode { return true }
        return false
    }

    /// Exactly one `Authorization: Bearer <token>` field (scheme in any case, one space), the
    /// token compared in constant time. Two fields are refused: a proxy in front may keep the
    /// first or the last, and the strictest reading of two is none.
    func verdict(for request: ServiceRequest) -> Verdict {
        switch mode {
        case .off:
            return .off("admin.token is not set and admin.listen is not a loopback or unix: address")
        case .localOnly:
            return .allowed
        case .token(let expected):
            let fields = request.headers("authorization")
            guard fields.count == 1, let presented = Self.bearer(fields[0]) else { return .unauthenticated }
            return ConstantTime.equals(presented, expected) ? .allowed : .unauthenticated
        }
    }

    private static func bearer(_ field: String) -> [UInt8]? {
        let bytes = Array(field.utf8)
        let scheme = Array("bearer ".utf8)
        guard bytes.count > scheme.count,
              zip(bytes, scheme).allSatisfy({ ($0 | ($0 >= 0x41 && $0 <= 0x5A ? 0x20 : 0)) == $1 })
        else { return nil }
        let token = bytes[scheme.count...]
        return token.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) ? Array(token) : nil
    }

    /// 127.0.0.0/8, ::1 (or a v4-mapped loopback) and unix sockets.
    static func isLocal(_ address: SocketAddress) -> Bool {
        switch address.family {
        case .unix: return true
        case .inet, .inet6:
            let bytes = address.ipBytes
            if bytes.count == 4 { return bytes[0] == 127 }
            return bytes.count == 16 && bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
        }
    }
}
