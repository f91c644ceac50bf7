import Logging
import SidecarHTTP

/// The credential and identity fields of a forwarded request, written after the
/// client's other fields (from which Cookie/Authorization were dropped when they carried
/// the session, and every identity header name in every spelling).
enum ForwardedIdentity {
    private static let logger = Logger(label: "sidecar.auth")

    /// Appends, after the client's other fields: the Cookie without the session cookie,
    /// Authorization fields other than the session bearer, the identity of the session.
    /// At most `bound(identity)` bytes beyond the head's own.
    static func append(
        _ view: HeadView, identity: RequestIdentity, settings: AuthSettings, into fields: inout HeadBuffer
    ) {
        if identity.stripCookie, !identity.otherCookies.isEmpty {
            // The other cookies were copied out of the parsed (so already safe) Cookie fields.
            fields.append("Cookie: ")
            fields.append(identity.otherCookies)
            fields.append("\r\n")
        }
        if identity.stripBearer {
            for field in view.fields where view.name(of: field, is: "authorization") && field.value != identity.bearer {
                // A repeated field may carry this or another session token: never forward one.
                if carriesSessionToken(view.bytes, field.value, settings: settings) { continue }
                fields.append(view[field.name])
                fields.append(": ")
                fields.append(view[field.value])
                fields.append("\r\n")
            }
        }
        guard let opened = identity.opened else { return }
        opened.withIdentityFields { fields.append($0) }
        if !opened.assertionField.isEmpty { fields.append(opened.assertionField) }
        let omission = opened.omission
        if omission != .none {
            logger.warning("identity header left out", metadata: [
                "reason": omission == .email ? "email_not_printable_ascii" : "user_id_unsafe",
            ])
        }
    }

    /// `Bearer <token>` whose token was sealed by this sidecar for sessions (expired or not):
    /// the sidecar's own credential, which the upstream must not see.
    static func carriesSessionToken(
        _ buf: UnsafeRawBufferPointer, _ value: ByteRange, settings: AuthSettings
    ) -> Bool {
        guard let token = SessionReader.bearerToken(buf, value) else { return false }
        let typed = buf.assumingMemoryBound(to: UInt8.self)
        let value = UnsafeBufferPointer(rebasing: typed[token])
        // Any realm's: a token of one site's sign-in is still this sidecar's on another's host.
        return settings.realms.all.contains { (try? settings.sessions.sealer.open(value, context: $0.sessionContext)) != nil }
    }

    /// What `append` may add beyond bytes of the client's head: the rebuilt Cookie field and
    /// the session's identity fields (re-added Authorization fields come from the head).
    static func bound(_ identity: RequestIdentity) -> Int {
        identity.otherCookies.count + 16 + (identity.opened.map { $0.identityFieldsCount + $0.assertionField.count } ?? 0)
    }
}
