import Logging
import SidecarHTTP

/// The credential and identity fields of a forwarded request (SPEC §4.3), written after the
/// client's other fields (from which Cookie/Authorization were dropped when they carried
/// the session, and every identity header name in every spelling).
enum ForwardedIdentity {
    private static let logger = Logger(label: "sidecar.auth")

    /// Appends, after the client's other fields: the Cookie without the session cookie,
    /// Authorization fields other than the session bearer, the identity of the session.
    static func append(
        _ head: HTTPRequestHead, identity: RequestIdentity, settings: AuthSettings, into fields: inout HeadWriter
    ) {
        if identity.stripCookie, !identity.otherCookies.isEmpty {
            let name: StaticString = "Cookie"
            identity.otherCookies.withUnsafeBytes { v in
                try? fields.appendField(
                    name: UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount), value: v)
            }
        }
        if let bearer = identity.bearer {
            head.storage.withUnsafeBufferPointer { typed in
                let buf = UnsafeRawBufferPointer(typed)
                for field in head.fields where head.fieldName(field, is: "authorization") && field.value != bearer {
                    // A repeated field may carry this or another session token: never forward one.
                    if carriesSessionToken(typed, field.value, settings: settings) { continue }
                    try? fields.appendField(
                        name: UnsafeRawBufferPointer(rebasing: buf[field.name.range]),
                        value: UnsafeRawBufferPointer(rebasing: buf[field.value.range]))
                }
            }
        }
        guard let opened = identity.opened else { return }
        fields.append(opened.identityFields)
        let omission = opened.omission
        if omission != .none {
            logger.warning("identity header left out", metadata: [
                "reason": omission == .email ? "email_not_printable_ascii" : "user_id_unsafe",
            ])
        }
    }

    /// `Bearer <token>` whose token was sealed by this sidecar for sessions (expired or not):
    /// the sidecar's own credential, which the upstream must not see.
    private static func carriesSessionToken(
        _ buf: UnsafeBufferPointer<UInt8>, _ value: ByteRange, settings: AuthSettings
    ) -> Bool {
        guard let token = Authenticator.bearerToken(UnsafeRawBufferPointer(buf), value) else { return false }
        return (try? settings.sessions.sealer.open(UnsafeBufferPointer(rebasing: buf[token]), context: settings.cookieName)) != nil
    }
}
