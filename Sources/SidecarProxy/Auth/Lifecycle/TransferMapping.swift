import Glibc
import SidecarCrypto

/// `apple.transfer.mapping_file`: the app's previous user id for each new `sub` after the app
/// moved to another team, read at start and on SIGHUP. Looked up once per sign-in (the value
/// is sealed into the session, so the request path only copies it).
///
/// The file is CSV, one user per line: the previous id, then the new sub, then anything (what
/// `sidecar transfer import` writes: `old_sub,new_sub,email,is_private_email,error`); a first
/// line naming the columns, blank lines and `#` comments are skipped, and a row whose new sub
/// is empty (Apple refused that user) is ignored.
final class TransferMapping: Sendable {
    let previousIDs: [String: String]
    let path: String

    /// The file read in at most 256 MiB; errors name its line.
    init(path: String) throws(AuthSetupError) {
        self.path = path
        guard let file = fopen(path, "r") else {
            throw AuthSetupError(description: "apple.transfer.mapping_file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n == 0 { break }
            bytes += buffer[0..<n]
            guard bytes.count <= 256 << 20 else {
                throw AuthSetupError(description: "apple.transfer.mapping_file \(path): larger than 256 MiB")
            }
        }
        var map: [String: String] = [:]
        for (index, raw) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var line = raw[...]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
            let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            let previous = String(decoding: fields[0], as: UTF8.self)
            if index == 0, previous == "old_sub" || previous == "old_id" || previous == "previous_user_id" { continue }
            guard fields.count >= 2 else {
                throw AuthSetupError(description: "apple.transfer.mapping_file \(path), line \(index + 1): expected old id,new sub")
            }
            let subject = String(decoding: fields[1], as: UTF8.self)
            if subject.isEmpty { continue }
            guard Self.isValue(fields[0]), Self.isValue(fields[1]) else {
                throw AuthSetupError(description: "apple.transfer.mapping_file \(path), line \(index + 1): an id is empty, "
                    + "longer than 255 bytes or holds a space, a quote or a control character")
            }
            if let other = map[subject], other != previous {
                throw AuthSetupError(description: "apple.transfer.mapping_file \(path), line \(index + 1): sub \(subject) "
                    + "is mapped twice, to \(other) and \(previous)")
            }
            map[subject] = previous
        }
        previousIDs = map
    }

    /// Printable ASCII without spaces or quotes: safe as a header value and a claim.
    private static func isValue(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.count <= 255 && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
    }
}

extension AuthSettings {
    /// What a new session keeps beyond the identity: the token's `transfer_sub`,
    /// `real_user_status` and `auth_time`, and the previous id `apple.transfer.mapping_file`
    /// names for the user's sub.
    func sessionExtras(for identity: AppleIdentity) -> SessionExtras {
        SessionExtras(
            transferSubject: identity.transferSubject.flatMap { $0.utf8.count <= 255 ? $0 : nil },
            previousUserID: lifecycle.transferMapping?.previousIDs[identity.subject],
            realUserStatus: identity.realUserStatus.map { UInt8($0) },
            authTime: identity.authTime)
    }
}
