import Glibc
import SidecarConfig
import SidecarCrypto
import Synchronization

/// What a configuration's `assertion:` section amounts to once its key is settled: the
/// signer every worker shares, the JWK Set `{prefix}/jwks.json` serves, the header's name.
final class AssertionSettings: Sendable {
    let signer: AssertionSigner
    /// The body of `jwks.json`: the current key and, after a rotation, the previous one.
    let jwks: [UInt8]
    let headerName: [UInt8]
    /// What happened to the key (generated, written, rotated): logged by `run`.
    let notes: [String]

    /// How long `jwks.json` may be cached. Short enough that a rotation reaches upstreams
    /// soon; the previous key stays published, so a stale cache never rejects an assertion
    /// signed before the change.
    static let jwksCacheControl: StaticString = "public, max-age=300"

    init(signer: AssertionSigner, jwks: [UInt8], headerName: String, notes: [String]) {
        self.signer = signer
        self.jwks = jwks
        self.headerName = Array(headerName.utf8)
        self.notes = notes
    }
}

/// The assertion keys of this process across reloads: which key signs now and
/// which one signed before it, so a SIGHUP that brings a new `assertion.private_key_file`
/// keeps the previous key published. A key generated because none is configured is kept
/// for the process: a reload does not rotate it.
final class AssertionKeyRing: Sendable {
    private struct State {
        var current: AssertionKey?
        var previous: AssertionKey?
        /// `current` was generated in memory (no key file configured).
        var currentIsEphemeral = false
    }

    private let state = Mutex(State())
    /// Whether a configured key file that does not exist yet is created (`run`), or the key
    /// is only generated in memory (`check` never writes files).
    let writesKeyFiles: Bool

    init(writesKeyFiles: Bool) { self.writesKeyFiles = writesKeyFiles }

    /// The signing key for `config` and the previous one; notes say what was done.
    func settle(_ config: Config.Assertion) throws(AuthSetupError) -> (current: AssertionKey, previous: AssertionKey?, notes: [String]) {
        var notes: [String] = []
        let key: AssertionKey
        var ephemeral = false
        if let secret = config.privateKey {
            do {
                key = AssertionKey(try P256PrivateKey(pem: secret.bytes))
            } catch {
                throw AuthSetupError(description: "assertion.private_key_file (\(secret.source)): not a P-256 PEM key")
            }
        } else if let path = config.privateKeyFile {
            let generated = try generate()
            if writesKeyFiles {
                if try Self.write(generated, to: path) {
                    key = generated
                    notes.append("assertion.private_key_file: generated a P-256 key (kid \(key.keyID)) and wrote it to \(path)")
                } else {
                    // Another replica sharing the file wrote it first: sign with that key.
                    key = try Self.read(path)
                }
            } else {
                key = generated
            }
        } else if let current = state.withLock({ $0.currentIsEphemeral ? $0.current : nil }) {
            key = current
            ephemeral = true
        } else {
            key = try generate()
            ephemeral = true
            notes.append("assertion: signing with a key generated for this process (kid \(key.keyID)); "
                + "set assertion.private_key_file to keep it across restarts")
        }
        return state.withLock { state in
            if let current = state.current, current.keyID != key.keyID {
                state.previous = current
                notes.append("assertion key changed to kid \(key.keyID); kid \(current.keyID) stays published in jwks.json")
            }
            state.current = key
            state.currentIsEphemeral = ephemeral
            return (key, state.previous, notes)
        }
    }

    private func generate() throws(AuthSetupError) -> AssertionKey {
        do { return try AssertionKey.generate() } catch {
            throw AuthSetupError(description: "assertion: cannot generate a P-256 key: \(error)")
        }
    }

    /// Creates `path` (never overwrites: O_EXCL) readable by the owner only, and syncs it, so a
    /// restart finds the same key. False when the file exists by now.
    private static func write(_ key: AssertionKey, to path: String) throws(AuthSetupError) -> Bool {
        let pem: [UInt8]
        do { pem = Array(try key.privateKey.pkcs8PEM().utf8) } catch {
            throw AuthSetupError(description: "assertion: cannot encode the generated key: \(error)")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 && errno == EEXIST { return false }
        guard fd >= 0 else {
            throw AuthSetupError(description: "assertion.private_key_file: cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var written = 0
        while written < pem.count {
            let count = pem.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, pem.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                unlink(path)
                throw AuthSetupError(description: "assertion.private_key_file: cannot write \(path): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            unlink(path)
            throw AuthSetupError(description: "assertion.private_key_file: cannot sync \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }

    /// The key another process wrote to `path` (at most 64 KiB, P-256).
    private static func read(_ path: String) throws(AuthSetupError) -> AssertionKey {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AuthSetupError(description: "assertion.private_key_file: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 64 << 10 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        do { return AssertionKey(try P256PrivateKey(pem: bytes)) } catch {
            throw AuthSetupError(description: "assertion.private_key_file: \(path) is not a P-256 PEM key")
        }
    }
}

extension AssertionSettings {
    /// nil when `assertion.enabled` is false.
    static func make(config: Config, ring: AssertionKeyRing) throws(AuthSetupError) -> AssertionSettings? {
        guard config.assertion.enabled else { return nil }
        let keys = try ring.settle(config.assertion)
        let signer = AssertionSigner(
            key: keys.current, issuer: config.publicURL.origin, audience: config.assertion.audience,
            ttl: config.assertion.ttl.seconds)
        return AssertionSettings(
            signer: signer, jwks: AssertionKeySet.document(current: keys.current, previous: keys.previous),
            headerName: config.headers.assertion, notes: keys.notes)
    }
}
