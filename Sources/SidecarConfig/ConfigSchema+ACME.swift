import Foundation

/// `tls.acme` and its rules against `public_url`, `listen` and `revocations.store`.
extension ConfigSchema {
    /// Every key is read even when `tls.acme` is absent (they are declared so, and their
    /// defaults apply); the rules between keys, and against public_url and listen, apply only
    /// when it is set.
    mutating func readACME(_ tls: Section, context: ParseContext, listen: ListenAddress) -> Config.ACME? {
        let isSet = tls.contains("acme")
        let section = tls.section("acme")
        var acme = section.read(Config.ACME.self, context: context)
        guard isSet else { return nil }
        for key in ["cert_file", "key_file"] where tls.contains(key) {
            reader.report(.invalidValue, "tls.\(key)", at: tls.location(of: key),
                          "set beside tls.acme: the certificate is either a file or obtained by ACME, not both")
        }
        let publicURL = context.publicURL
        if section.contains("domains") {
            if acme.domains.isEmpty {
                reader.report(.invalidValue, "tls.acme.domains", at: section.location(of: "domains"),
                              "lists no domain (leave it out for public_url's host)")
            } else if let publicURL, !acme.domains.contains(publicURL.host) {
                reader.report(.invalidValue, "tls.acme.domains", at: section.location(of: "domains"),
                              "does not list \(publicURL.host), public_url's host: browsers would refuse the certificate")
            }
        } else if let publicURL {
            acme.domains = [publicURL.host]
        }
        if let publicURL, !publicURL.isHTTPS {
            reader.report(.invalidValue, "tls.acme", at: tls.location(of: "acme"),
                          "set while public_url is \(publicURL.origin): make public_url https://")
        }
        if Set(acme.domains).count != acme.domains.count || acme.domains.count > 100 {
            reader.report(.invalidValue, "tls.acme.domains", at: section.location(of: "domains"),
                          "lists a domain twice or more than 100")
        }
        warnChallengePath(section, challenge: acme.challenge, httpListen: acme.httpListen, listen: listen)
        if acme.challenge == .http01, acme.httpListen == listen {
            reader.report(.invalidValue, "tls.acme.http_listen", at: section.location(of: "http_listen"),
                          "is listen itself; the plain listener for http-01 needs a port of its own (80)")
        }
        if (acme.eabKeyID == nil) != (acme.eabHMACKey == nil), section.contains("eab_kid") || section.contains("eab_hmac_key") {
            section.requireMissing(acme.eabKeyID == nil ? "eab_kid" : "eab_hmac_key", because: "external account binding needs both")
        }
        return acme.domains.isEmpty ? nil : acme
    }

    /// The CA connects to port 80 (HTTP-01) or 443 (TLS-ALPN-01) of each domain: another port
    /// works only behind a forward, which the sidecar cannot see, so it is a warning.
    private mutating func warnChallengePath(
        _ acme: Section, challenge: Config.ACME.Challenge, httpListen: ListenAddress, listen: ListenAddress
    ) {
        switch challenge {
        case .http01:
            if case .tcp(_, let port) = httpListen, port == 80 { return }
            warnings.append(ConfigWarning(
                path: "tls.acme.http_listen",
                message: "\(httpListen) is not port 80, where the CA asks for http-01 answers: forward port 80 to it"))
        case .tlsALPN01:
            if acme.contains("http_listen") {
                warnings.append(ConfigWarning(path: "tls.acme.http_listen", message: "applies to challenge: http-01 only"))
            }
            if case .tcp(_, let port) = listen, port == 443 { return }
            warnings.append(ConfigWarning(
                path: "tls.acme.challenge",
                message: "tls-alpn-01 is answered on listen (\(listen)), but the CA connects to port 443: "
                    + "forward port 443 to it, or use http-01"))
        }
    }
}

/// base64url without padding (RFC 8555 §7.3.4's EAB key), or with it.
enum Base64URLText {
    static func decode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        guard let data = Data(base64Encoded: standard), !data.isEmpty else { return nil }
        return Array(data)
    }
}
