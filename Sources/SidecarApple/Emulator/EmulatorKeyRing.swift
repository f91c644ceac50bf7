import Glibc
import SidecarCrypto

/// The emulator's RS256 signing keys: the newest signs, the older ones stay published (as
/// Apple keeps several keys in its JWKS). Optionally kept as `<kid>.pem` files in a directory.
final class EmulatorKeyRing {
    /// Apple publishes 3–5 keys; older ones fall out.
    static let maximumPublished = 4

    private(set) var keys: [(kid: String, key: RSAPrivateKey)] = []
    private let directory: String?

    init(directory: String?) throws(EmulatorConfigurationError) {
        self.directory = directory
        if let directory { keys = try Self.load(directory) }
        if keys.isEmpty { try rotate() }
    }

    var current: (kid: String, key: RSAPrivateKey) { keys[keys.count - 1] }

    var keySet: JWKSet {
        var published: [String: RSAPublicKey] = [:]
        for (kid, key) in keys { published[kid] = key.publicKey }
        return JWKSet(keys: published)
    }

    /// Adds a fresh key that signs from now on; returns its kid.
    @discardableResult
    func rotate() throws(EmulatorConfigurationError) -> String {
        let key: RSAPrivateKey
        let kid: String
        do {
            key = try RSAPrivateKey.generate(bits: 2048)
            kid = Base64URL.encode(try SecureRandom.bytes(6))
        } catch { throw .keys("cannot generate an RSA key: \(error)") }
        if let directory { try Self.save(key, kid: kid, in: directory) }
        keys.append((kid, key))
        if keys.count > Self.maximumPublished { keys.removeFirst(keys.count - Self.maximumPublished) }
        return kid
    }

    private static func load(_ directory: String) throws(EmulatorConfigurationError) -> [(kid: String, key: RSAPrivateKey)] {
        guard let dir = opendir(directory) else { throw .keys("cannot open directory \(directory)") }
        defer { closedir(dir) }
        var found: [(kid: String, key: RSAPrivateKey, modified: Int)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".pem"), name.count > 4 else { continue }
            let path = directory + "/" + name
            guard let bytes = readFile(path) else { throw .keys("cannot read \(path)") }
            let key: RSAPrivateKey
            do { key = try RSAPrivateKey(pem: bytes) } catch { throw .keys("\(path) is not an RSA private key") }
            var info = stat()
            let modified = stat(path, &info) == 0 ? Int(info.st_mtim.tv_sec) : 0
            found.append((String(name.dropLast(4)), key, modified))
        }
        // Oldest first, so the newest file signs.
        return found.sorted { ($0.modified, $0.kid) < ($1.modified, $1.kid) }
            .suffix(maximumPublished).map { ($0.kid, $0.key) }
    }

    private static func save(_ key: RSAPrivateKey, kid: String, in directory: String) throws(EmulatorConfigurationError) {
        let path = directory + "/" + kid + ".pem"
        let pem: String
        do { pem = try key.pkcs8PEM() } catch { throw .keys("cannot encode key: \(error)") }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .keys("cannot create \(path)") }
        defer { close(fd) }
        let bytes = Array(pem.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw .keys("cannot write \(path)") }
    }
}

/// Reads a whole (small) file; nil when it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
        let n = read(fd, &chunk, chunk.count)
        if n < 0 { return nil }
        if n == 0 { return result }
        result.append(contentsOf: chunk[0..<n])
        if result.count > 1 << 20 { return nil }
    }
}

/// Apple-shaped identifiers derived from the team and the user's real email, so the same
/// person gets the same `sub` (and relay address) across runs, as with Apple (pairwise per team).
enum AppleIdentifiers {
    /// `000123.<32 hex>.0456`.
    static func subject(teamID: String, email: String) -> String {
        let digest = SHA256.hash(Array("sub\u{0}\(teamID)\u{0}\(email.lowercased())".utf8))
        let head = (Int(digest[0]) << 8 | Int(digest[1])) % 1000
        let tail = (Int(digest[18]) << 8 | Int(digest[19])) % 10000
        return "000" + padded(head, 3) + "." + Hex.encode(digest[2..<18]) + "." + padded(tail, 4)
    }

    /// `<10 letters/digits>@privaterelay.appleid.com`.
    static func relayEmail(teamID: String, email: String) -> String {
        let digest = SHA256.hash(Array("relay\u{0}\(teamID)\u{0}\(email.lowercased())".utf8))
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String(digest.prefix(10).map { alphabet[Int($0) % alphabet.count] }) + "@privaterelay.appleid.com"
    }

    /// An opaque random token with a recognisable prefix (codes `c…`, refresh tokens `r…`).
    static func token(prefix: String) throws(CryptoError) -> String {
        let bytes = try SecureRandom.bytes(24)
        return prefix + Hex.encode(bytes[0..<16]) + ".0.emu." + Base64URL.encode(bytes[16...])
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
