import SidecarCrypto
import SidecarEvent
import SidecarRESP
import SidecarStore

/// `tls.acme.share_via_store`: the account key and the certificate with its key in the Redis
/// store the replicas share (`revocations.store`), and the ordering lock there too — `SET NX
/// PX` with a random token, released only by its holder — so one replica orders at a time and
/// the others pick up its certificate. Blocking calls on the ACME thread's own connection.
public final class RedisStorage: CertificateStorage {
    private let store: RedisStore
    private let waiter: LoopWaiter
    private let accountKeyName: String
    private let certificateName: String
    private let certificateKeyName: String
    private let lockName: String
    private var lockToken: String?

    public init(store: RedisStore, waiter: LoopWaiter, caHost: String, name: String) {
        self.store = store
        self.waiter = waiter
        accountKeyName = store.sharedKey("acme:account:" + caHost)
        certificateName = store.sharedKey("acme:cert:" + name)
        certificateKeyName = store.sharedKey("acme:key:" + name)
        lockName = store.sharedKey("acme:lock:" + name)
        store.attach(to: waiter.loop)
    }

    public var location: String { store.sharedLocation }

    public func accountKey() throws(ACMEError) -> String? {
        try string(command(["GET", accountKeyName]))
    }

    public func saveAccountKey(_ pem: String) throws(ACMEError) {
        // NX: two replicas starting at once keep the first key, and both then use it.
        _ = try command(["SET", accountKeyName, pem, "NX"])
    }

    public func certificate() throws(ACMEError) -> StoredCertificate? {
        guard case .array(let values?) = try command(["MGET", certificateName, certificateKeyName]), values.count == 2,
              let chain = try string(values[0]), let key = try string(values[1]) else { return nil }
        return StoredCertificate(chainPEM: chain, keyPEM: key)
    }

    public func saveCertificate(_ certificate: StoredCertificate) throws(ACMEError) {
        // One MSET: a replica reading between two SETs could pair a new chain with an old key.
        _ = try command(["MSET", certificateName, certificate.chainPEM, certificateKeyName, certificate.keyPEM])
    }

    public func acquireOrderLock(seconds: Int) throws(ACMEError) -> Bool {
        let token: String
        do { token = Base64URL.encode(try SecureRandom.bytes(16)) } catch {
            throw ACMEError(.local, "acme: no random bytes for the lock")
        }
        switch try command(["SET", lockName, token, "NX", "EX", String(seconds)]) {
        case .simple("OK"):
            lockToken = token
            return true
        default:
            return false
        }
    }

    public func releaseOrderLock() {
        guard let token = lockToken else { return }
        lockToken = nil
        _ = try? command(["EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
                          "1", lockName, token])
    }

    // MARK: HTTP-01 answers any replica can give

    /// A load balancer may send the CA's request to any replica: each looks here for a token
    /// it did not present itself.
    func putChallenge(token: String, keyAuthorization: String) throws(ACMEError) {
        _ = try command(["SET", challengeName(token), keyAuthorization, "EX", "600"])
    }

    func removeChallenge(token: String) {
        _ = try? command(["DEL", challengeName(token)])
    }

    /// Asynchronous: called from the HTTP-01 listener's handler on the ACME loop. While the
    /// connection comes up (a replica just started) the lookup is tried again for up to 2 s.
    func lookupChallenge(token: String, attempt: Int = 0, completion: @escaping (String?) -> Void) {
        store.sharedCommand([Array("GET".utf8), Array(challengeName(token).utf8)]) { [self] reply in
            guard let reply else {
                guard attempt < 20 else { return completion(nil) }
                let timer = Timer(loop: waiter.loop)
                // The timer holds itself through its handler until it fires, then lets go.
                timer.onFire { [self] in
                    timer.onFire {}
                    lookupChallenge(token: token, attempt: attempt + 1, completion: completion)
                }
                return timer.schedule(afterMilliseconds: 100)
            }
            guard case .bulk(let bytes?) = reply, bytes.count <= 1024 else { return completion(nil) }
            completion(String(decoding: bytes, as: UTF8.self))
        }
    }

    private func challengeName(_ token: String) -> String { store.sharedKey("acme:http-01:" + token) }

    /// One command, retried while the connection comes up (a few seconds at most).
    private func command(_ arguments: [String]) throws(ACMEError) -> RESPValue {
        for attempt in 0..<20 {
            let answered: RESPValue?? = waiter.waitUnlessStopped { done in
                store.sharedCommand(arguments.map { Array($0.utf8) }, reply: done)
            }
            guard let reply = answered else { throw ACMEError(.stopped, "acme: stopping") }
            if let reply {
                if case .error(let message) = reply {
                    throw ACMEError(.transport, "acme: redis \(store.sharedLocation) answered: \(message)")
                }
                return reply
            }
            if attempt < 19 { waiter.sleep(milliseconds: 250) }
        }
        throw ACMEError(.transport, "acme: redis \(store.sharedLocation) is unavailable")
    }

    private func string(_ value: RESPValue) throws(ACMEError) -> String? {
        switch value {
        case .bulk(nil): return nil
        case .bulk(let bytes?) where bytes.count <= 1 << 20: return String(decoding: bytes, as: UTF8.self)
        default: throw ACMEError(.malformed, "acme: redis \(store.sharedLocation): unexpected value for a shared key")
        }
    }
}
