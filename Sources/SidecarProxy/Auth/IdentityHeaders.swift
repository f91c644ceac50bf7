import SidecarConfig
import SidecarCrypto
import SidecarHTTP

/// The configured names of the injected identity headers, as bytes. A class: the request
/// path hands it to every entry it renders, one reference instead of five arrays to retain.
final class IdentityHeaderNames: Sendable {
    let userID: [UInt8]
    let email: [UInt8]
    let emailVerified: [UInt8]
    let privateEmail: [UInt8]
    let name: [UInt8]

    init(_ headers: Config.Headers) {
        userID = Array(headers.userID.utf8)
        email = Array(headers.email.utf8)
        emailVerified = Array(headers.emailVerified.utf8)
        privateEmail = Array(headers.privateEmail.utf8)
        name = Array(headers.name.utf8)
    }

    /// The same names in arrays of a worker's own (`AuthSettings(workerCopyOf:)`).
    init(workerCopyOf other: IdentityHeaderNames) {
        userID = other.userID.ownStorageCopy()
        email = other.email.ownStorageCopy()
        emailVerified = other.emailVerified.ownStorageCopy()
        privateEmail = other.privateEmail.ownStorageCopy()
        name = other.name.ownStorageCopy()
    }
}

/// Writes a session's identity as header fields: user id, email (printable ASCII
/// only), `true`/`false` flags, the name percent-encoded as UTF-8. The client's copies of
/// these names were already dropped in every spelling.
enum IdentityHeaders {
    enum Omission { case none, email, userID }

    /// The fields of one session laid out: how many bytes they take and what had to be left
    /// out, then `write(into:)` copies them — so the caller can put them in an allocation it
    /// makes anyway (`OpenedSession`'s storage), as plain copies. Rendered on every
    /// session-cache miss. The names were validated with the configuration (`headers.*`);
    /// the values are checked here: the user id and email must be safe field values (the
    /// email printable ASCII too), else they are left out.
    struct Layout {
        let byteCount: Int
        let omission: Omission
        private let fields: SessionFields
        private let writeSubject: Bool
        private let writeEmail: Bool

        /// `scratch` receives the percent-encoded name; it must stay unchanged until `write`.
        init(_ fields: SessionFields, names: IdentityHeaderNames, scratch: inout [UInt8]) {
            self.fields = fields
            var omission = Omission.none
            writeSubject = IdentityHeaders.isSafeValue(fields[fields.subject], printableASCII: false)
            if !writeSubject { omission = .userID }
            writeEmail = fields.email.map { IdentityHeaders.isSafeValue(fields[$0], printableASCII: true) } ?? false
            if fields.email != nil, !writeEmail, omission == .none { omission = .email }
            scratch.removeAll(keepingCapacity: true)
            if let name = fields.name, !name.isEmpty {
                let bytes = fields[name]
                scratch.reserveCapacity(PercentEncoding.encodedCount(bytes))
                PercentEncoding.append(bytes, into: &scratch)
            }
            var total = names.emailVerified.count + 4 + (fields.emailVerified ? 4 : 5)
                + names.privateEmail.count + 4 + (fields.privateEmail ? 4 : 5)
            if writeSubject { total += names.userID.count + 4 + fields.subject.count }
            if writeEmail, let email = fields.email { total += names.email.count + 4 + email.count }
            if !scratch.isEmpty { total += names.name.count + 4 + scratch.count }
            byteCount = total
            self.omission = omission
        }

        /// Each field to send, in order: the one place the rules above become fields.
        func forEachField(
            names: IdentityHeaderNames, scratch: [UInt8],
            _ body: (_ name: [UInt8], _ value: UnsafeBufferPointer<UInt8>) -> Void
        ) {
            func flag(_ name: [UInt8], _ value: Bool) {
                let text: StaticString = value ? "true" : "false"
                body(name, UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            }
            if writeSubject { body(names.userID, fields[fields.subject]) }
            if writeEmail, let email = fields.email { body(names.email, fields[email]) }
            flag(names.emailVerified, fields.emailVerified)
            flag(names.privateEmail, fields.privateEmail)
            if !scratch.isEmpty { scratch.withUnsafeBufferPointer { body(names.name, $0) } }
        }

        /// Writes exactly `byteCount` bytes at `start`: `Name: value\r\n` per field.
        func write(into start: UnsafeMutablePointer<UInt8>, names: IdentityHeaderNames, scratch: [UInt8]) {
            var at = start
            func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
                at.initialize(from: base, count: bytes.count)
                at += bytes.count
            }
            forEachField(names: names, scratch: scratch) { name, value in
                name.withUnsafeBufferPointer { put($0) }
                at[0] = UInt8(ascii: ":"); at[1] = UInt8(ascii: " "); at += 2
                put(value)
                at[0] = 0x0D; at[1] = 0x0A; at += 2  // CRLF
            }
            assert(at - start == byteCount)
        }
    }

    /// The fields of `session` laid out (nil if the codec cannot carry it: sealing it fails too).
    private static func withLayout<Result>(
        _ session: Session, names: IdentityHeaderNames, _ body: (Layout, _ scratch: [UInt8]) -> Result
    ) -> Result? {
        session.encoded.withUnsafeBufferPointer { payload in
            guard session.isEncodable, let fields = try? SessionFields(parsing: payload) else { return nil }
            var scratch: [UInt8] = []
            let layout = Layout(fields, names: names, scratch: &scratch)
            return body(layout, scratch)
        }
    }

    /// The fields of `session` as one block (tests; the request path uses `Layout` into the
    /// cache entry's storage).
    static func render(_ session: Session, names: IdentityHeaderNames) -> (fields: [UInt8], omission: Omission) {
        withLayout(session, names: names) { layout, scratch in
            let block = [UInt8](unsafeUninitializedCapacity: layout.byteCount) { buffer, initialized in
                layout.write(into: buffer.baseAddress!, names: names, scratch: scratch)
                initialized = layout.byteCount
            }
            return (block, layout.omission)
        } ?? ([], .userID)
    }

    /// A field value safe to send: no control characters, no edge whitespace
    /// (`HeaderValue.isSafe`); with `printableASCII` also nothing outside 0x20–0x7E.
    fileprivate static func isSafeValue(_ value: UnsafeBufferPointer<UInt8>, printableASCII: Bool) -> Bool {
        if printableASCII {
            for c in value where c < 0x20 || c >= 0x7F { return false }
            guard let first = value.first, let last = value.last else { return true }
            return first != 0x20 && last != 0x20
        }
        return HeaderValue.isSafe(UnsafeRawBufferPointer(value))
    }
}
