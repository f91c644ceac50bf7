import SidecarConfig
import SidecarCrypto
import SidecarHTTP

/// The configured names of the injected identity headers, as bytes; empty for one that is
/// not sent (`none`). A class: the request path hands it to every entry it renders, one
/// reference instead of ten arrays to retain.
final class IdentityHeaderNames: Sendable {
    let userID: [UInt8]
    let email: [UInt8]
    let emailVerified: [UInt8]
    let privateEmail: [UInt8]
    let name: [UInt8]
    let transferSub: [UInt8]
    let previousUserID: [UInt8]
    let realUserStatus: [UInt8]
    let authTime: [UInt8]
    let sessionIssuedAt: [UInt8]

    init(_ headers: Config.Headers) {
        func bytes(_ name: String) -> [UInt8] { name == Config.Headers.notSent ? [] : Array(name.utf8) }
        userID = bytes(headers.userID)
        email = bytes(headers.email)
        emailVerified = bytes(headers.emailVerified)
        privateEmail = bytes(headers.privateEmail)
        name = bytes(headers.name)
        transferSub = bytes(headers.transferSub)
        previousUserID = bytes(headers.previousUserID)
        realUserStatus = bytes(headers.realUserStatus)
        authTime = bytes(headers.authTime)
        sessionIssuedAt = bytes(headers.sessionIssuedAt)
    }

    /// The same names in arrays of a worker's own (`AuthSettings(workerCopyOf:)`).
    init(workerCopyOf other: IdentityHeaderNames) {
        userID = other.userID.ownStorageCopy()
        email = other.email.ownStorageCopy()
        emailVerified = other.emailVerified.ownStorageCopy()
        privateEmail = other.privateEmail.ownStorageCopy()
        name = other.name.ownStorageCopy()
        transferSub = other.transferSub.ownStorageCopy()
        previousUserID = other.previousUserID.ownStorageCopy()
        realUserStatus = other.realUserStatus.ownStorageCopy()
        authTime = other.authTime.ownStorageCopy()
        sessionIssuedAt = other.sessionIssuedAt.ownStorageCopy()
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
        private let writeTransferSub: Bool
        private let writePreviousUserID: Bool

        /// `scratch` receives the percent-encoded name; it must stay unchanged until `write`.
        init(_ fields: SessionFields, names: IdentityHeaderNames, scratch: inout [UInt8]) {
            self.fields = fields
            var omission = Omission.none
            writeSubject = IdentityHeaders.isSafeValue(fields[fields.subject], printableASCII: false)
            if !writeSubject { omission = .userID }
            writeEmail = fields.email.map { IdentityHeaders.isSafeValue(fields[$0], printableASCII: true) } ?? false
            if fields.email != nil, !writeEmail, omission == .none { omission = .email }
            let extras = fields.extras
            writeTransferSub = !names.transferSub.isEmpty
                && extras.transferSubject.map { IdentityHeaders.isSafeValue(fields[$0], printableASCII: true) } ?? false
            writePreviousUserID = !names.previousUserID.isEmpty
                && extras.previousUserID.map { IdentityHeaders.isSafeValue(fields[$0], printableASCII: true) } ?? false
            scratch.removeAll(keepingCapacity: true)
            if let name = fields.name, !name.isEmpty, !names.name.isEmpty {
                let bytes = fields[name]
                scratch.reserveCapacity(PercentEncoding.encodedCount(bytes))
                PercentEncoding.append(bytes, into: &scratch)
            }
            func field(_ name: [UInt8], _ valueCount: Int) -> Int { name.isEmpty ? 0 : name.count + 4 + valueCount }
            var total = field(names.emailVerified, fields.emailVerified ? 4 : 5)
                + field(names.privateEmail, fields.privateEmail ? 4 : 5)
            if writeSubject { total += field(names.userID, fields.subject.count) }
            if writeEmail, let email = fields.email { total += field(names.email, email.count) }
            if !scratch.isEmpty { total += field(names.name, scratch.count) }
            if writeTransferSub, let value = extras.transferSubject { total += field(names.transferSub, value.count) }
            if writePreviousUserID, let value = extras.previousUserID { total += field(names.previousUserID, value.count) }
            if extras.realUserStatus != nil { total += field(names.realUserStatus, 1) }
            if let authTime = extras.authTime { total += field(names.authTime, DecimalDigits.count(authTime)) }
            total += field(names.sessionIssuedAt, DecimalDigits.count(fields.issuedAt))
            byteCount = total
            self.omission = omission
        }

        /// Each field to send, in order: the one place the rules above become fields.
        func forEachField(
            names: IdentityHeaderNames, scratch: [UInt8],
            _ body: (_ name: [UInt8], _ value: UnsafeBufferPointer<UInt8>) -> Void
        ) {
            func send(_ name: [UInt8], _ value: UnsafeBufferPointer<UInt8>) {
                if !name.isEmpty { body(name, value) }
            }
            func flag(_ name: [UInt8], _ value: Bool) {
                let text: StaticString = value ? "true" : "false"
                send(name, UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            }
            func number(_ name: [UInt8], _ value: Int64) {
                guard !name.isEmpty else { return }
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
                    body(name, UnsafeBufferPointer(rebasing: digits[0..<DecimalDigits.write(value, into: digits)]))
                }
            }
            if writeSubject { send(names.userID, fields[fields.subject]) }
            if writeEmail, let email = fields.email { send(names.email, fields[email]) }
            flag(names.emailVerified, fields.emailVerified)
            flag(names.privateEmail, fields.privateEmail)
            if !scratch.isEmpty { scratch.withUnsafeBufferPointer { send(names.name, $0) } }
            let extras = fields.extras
            if writeTransferSub, let value = extras.transferSubject { send(names.transferSub, fields[value]) }
            if writePreviousUserID, let value = extras.previousUserID { send(names.previousUserID, fields[value]) }
            if let status = extras.realUserStatus { number(names.realUserStatus, Int64(status)) }
            if let authTime = extras.authTime { number(names.authTime, authTime) }
            number(names.sessionIssuedAt, fields.issuedAt)
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

/// Decimal digits of an integer without allocating: the times identity fields carry.
enum DecimalDigits {
    static func count(_ value: Int64) -> Int {
        var magnitude = value.magnitude, digits = 1
        while magnitude >= 10 {
            magnitude /= 10
            digits += 1
        }
        return value < 0 ? digits + 1 : digits
    }

    /// Writes `value` at the start of `buffer` (at least 20 bytes); returns how many bytes.
    static func write(_ value: Int64, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let total = count(value)
        var magnitude = value.magnitude, at = total
        repeat {
            at -= 1
            buffer[at] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 { buffer[0] = UInt8(ascii: "-") }
        return total
    }
}
