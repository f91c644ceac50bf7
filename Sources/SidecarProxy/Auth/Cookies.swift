import Glibc
import SidecarHTTP

/// `Cookie` request fields read in place (RFC 6265 §5.4 `name=value; name=value`), without
/// copying or Foundation: what the per-request path uses to find the session cookie.
enum CookieHeader {
    /// Calls `body(name, value, pair)` with index ranges into `buf` for every pair of every
    /// Cookie field of `head`, until `body` returns false. Quotes around a value are removed
    /// (`pair` keeps them).
    static func forEachPair(in view: HeadView, _ body: (Range<Int>, Range<Int>, Range<Int>) -> Bool) {
        let buf = view.bytes
        guard let base = buf.baseAddress else { return }
        for field in view.fields where view.name(of: field, is: "cookie") {
            var i = Int(field.value.start)
            let end = Int(field.value.end)
            while i < end {
                while i < end, buf[i] == 0x20 || buf[i] == 0x09 || buf[i] == 0x3B { i += 1 }
                let pairStart = i
                // memchr: session cookies are long, and a byte loop over them showed in profiles.
                if let semicolon = memchr(base + i, 0x3B, end - i) {
                    i = base.distance(to: UnsafeRawPointer(semicolon))
                } else {
                    i = end
                }
                var pairEnd = i
                while pairEnd > pairStart, buf[pairEnd - 1] == 0x20 || buf[pairEnd - 1] == 0x09 { pairEnd -= 1 }
                guard pairEnd > pairStart else { continue }
                var eq = pairStart
                while eq < pairEnd, buf[eq] != 0x3D { eq += 1 }
                guard eq < pairEnd else { continue }  // a pair without `=` is ignored
                var nameEnd = eq
                while nameEnd > pairStart, buf[nameEnd - 1] == 0x20 || buf[nameEnd - 1] == 0x09 { nameEnd -= 1 }
                var valueStart = eq + 1
                while valueStart < pairEnd, buf[valueStart] == 0x20 || buf[valueStart] == 0x09 { valueStart += 1 }
                var valueEnd = pairEnd
                if valueEnd - valueStart >= 2, buf[valueStart] == 0x22, buf[valueEnd - 1] == 0x22 {
                    valueStart += 1
                    valueEnd -= 1
                }
                if !body(pairStart..<nameEnd, valueStart..<valueEnd, pairStart..<pairEnd) { return }
            }
        }
    }

    /// The value range of the first cookie named exactly `name`.
    static func find(_ name: [UInt8], in view: HeadView) -> Range<Int>? {
        var found: Range<Int>?
        forEachPair(in: view) { n, v, _ in
            if equal(view.bytes, n, name) {
                found = v
                return false
            }
            return true
        }
        return found
    }

    /// In one pass: the value range of the first cookie named `name`, and every pair not
    /// named `name` appended to the emptied `others` as a Cookie value (`a=1; b=2`).
    static func split(_ name: [UInt8], in view: HeadView, others: inout [UInt8]) -> Range<Int>? {
        let buf = view.bytes
        var found: Range<Int>?
        others.removeAll(keepingCapacity: true)
        forEachPair(in: view) { n, v, pair in
            if equal(buf, n, name) {
                if found == nil { found = v }
            } else {
                if !others.isEmpty {
                    others.append(0x3B)
                    others.append(0x20)
                }
                others.append(contentsOf: UnsafeRawBufferPointer(rebasing: buf[pair]))
            }
            return true
        }
        if found == nil { others.removeAll(keepingCapacity: true) }  // nothing to strip: forwarded as sent
        return found
    }

    static func equal(_ buf: UnsafeRawBufferPointer, _ range: Range<Int>, _ name: [UInt8]) -> Bool {
        guard range.count == name.count else { return false }
        return name.withUnsafeBytes { name in
            var j = 0
            for i in range {
                if buf[i] != name[j] { return false }
                j += 1
            }
            return true
        }
    }
}

/// `Set-Cookie` values for the session and login-state cookies.
enum SetCookie {
    /// The session cookie: `HttpOnly; Secure` (an https `public_url`); `SameSite=Lax; Path=/`;
    /// `Domain` for the top-level sign-in with `session.domain` (`realm`: the sign-in it is of).
    static func session(_ value: String, maxAge: Int64, settings: AuthSettings, realm: SignInRealm) -> [UInt8] {
        var text = "\(settings.cookieName)=\(value); Path=/; Max-Age=\(max(0, maxAge)); HttpOnly; SameSite=Lax"
        if settings.secureCookies { text += "; Secure" }
        if let domain = realm.cookieDomain { text += "; Domain=\(domain)" }
        return Array(text.utf8)
    }

    /// Deletes the session cookie of the sign-in of `head`'s host.
    static func clearSession(settings: AuthSettings, for head: HTTPRequestHead) -> [UInt8] {
        session("", maxAge: 0, settings: settings, realm: settings.realms.all[settings.realms.realm(of: head)])
    }

    /// A login-state cookie: it must come back with Apple's cross-site form_post, hence
    /// `SameSite=None; Secure`; only the prefix's endpoints see it.
    static func loginState(name: String, value: String, maxAge: Int64, settings: AuthSettings) -> [UInt8] {
        var text = "\(name)=\(value); Path=\(settings.prefix); Max-Age=\(max(0, maxAge)); HttpOnly"
        text += settings.secureCookies ? "; Secure; SameSite=None" : "; SameSite=Lax"
        return Array(text.utf8)
    }

    static func clearLoginState(name: String, settings: AuthSettings) -> [UInt8] {
        loginState(name: name, value: "", maxAge: 0, settings: settings)
    }
}
