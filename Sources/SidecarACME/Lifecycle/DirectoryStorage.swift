import Glibc

/// `tls.acme.storage: /dir`: `account-<CA host>.key`, `<domain>.crt` and `<domain>.key`, each
/// written whole to a temporary file and renamed (a crash leaves the old or the new, never
/// half of one), mode 0600 in a directory of mode 0700, owned by the user the sidecar runs as.
public final class DirectoryStorage: CertificateStorage {
    public let directory: String
    private let accountFile: String
    private let certificateFile: String
    private let keyFile: String

    /// `caHost` names the account file: an account belongs to one CA. `name` is the first domain.
    /// `create` false: only to read (`sidecar acme status`): a missing directory holds nothing.
    public init(directory: String, caHost: String, name: String, create: Bool = true) throws(ACMEError) {
        self.directory = directory
        accountFile = directory + "/account-" + Self.safe(caHost) + ".key"
        certificateFile = directory + "/" + Self.safe(name) + ".crt"
        keyFile = directory + "/" + Self.safe(name) + ".key"
        guard create else { return }
        var info = stat()
        if stat(directory, &info) != 0 {
            guard mkdir(directory, 0o700) == 0 else {
                throw ACMEError(.local, "tls.acme.storage: cannot create \(directory): \(String(cString: strerror(errno)))")
            }
        } else if info.st_mode & S_IFMT != S_IFDIR {
            throw ACMEError(.local, "tls.acme.storage: \(directory) is not a directory")
        } else if info.st_mode & 0o077 != 0 {
            // Private keys live here: nobody else may list or open it.
            _ = chmod(directory, 0o700)
        }
        guard access(directory, W_OK) == 0 else {
            throw ACMEError(.local, "tls.acme.storage: \(directory) is not writable by this user")
        }
    }

    public var location: String { directory }
    /// The files the TLS listener serves (written by `saveCertificate`).
    public var servedFiles: (certificate: String, key: String) { (certificateFile, keyFile) }

    public func accountKey() throws(ACMEError) -> String? { try read(accountFile) }
    public func saveAccountKey(_ pem: String) throws(ACMEError) { try write(pem, to: accountFile) }

    public func certificate() throws(ACMEError) -> StoredCertificate? {
        guard let chain = try read(certificateFile), let key = try read(keyFile) else { return nil }
        return StoredCertificate(chainPEM: chain, keyPEM: key)
    }

    public func saveCertificate(_ certificate: StoredCertificate) throws(ACMEError) {
        // The key first: a certificate beside an older key would not load; the reverse pair
        // (new key, old certificate) is never served because the pair is checked on load.
        try write(certificate.keyPEM, to: keyFile)
        try write(certificate.chainPEM, to: certificateFile)
    }

    public func acquireOrderLock(seconds: Int) throws(ACMEError) -> Bool { true }
    public func releaseOrderLock() {}

    /// Letters, digits, `.`, `-`; anything else (a `/` above all) becomes `_`.
    static func safe(_ name: String) -> String {
        String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") ? $0 : "_" })
    }

    private func read(_ path: String) throws(ACMEError) -> String? {
        guard let file = fopen(path, "rb") else {
            if errno == ENOENT { return nil }
            throw ACMEError(.local, "acme: cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            bytes += chunk[..<count]
            guard bytes.count <= 1 << 20 else { throw ACMEError(.local, "acme: \(path) is larger than 1 MiB") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func writeFile(_ text: String, to path: String) throws(ACMEError) { try write(text, to: path) }

    private func write(_ text: String, to path: String) throws(ACMEError) {
        let temporary = path + ".tmp"
        _ = unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ACMEError(.local, "acme: cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                close(fd)
                throw ACMEError(.local, "acme: cannot write \(temporary): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            throw ACMEError(.local, "acme: cannot store \(path): \(String(cString: strerror(errno)))")
        }
    }
}
