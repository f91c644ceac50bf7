import Foundation

/// `tls.acme` and its rules against `public_url`, `listen` and `revocations.store`.
extension ConfigSchema {
    /// Every key is read even when `tls.acme` is absent (they are declared so, and their
    /// defaults apply); the rules between keys apply only when it is set.
    mutating func readACME(_ tls: Section, publicURL: HTTPURL?, listen: ListenAddress) -> Config.ACME? {
        let isSet = tls.contains("acme")
        let acme = tls.section("acme")
        for key in ["cert_file", "key_file"] where isSet && tls.contains(key) {
            reader.report(.invalidValue, "tls.\(key)", at: tls.location(of: key),
                          "set beside tls.acme: the certificate is either a file or obtained by ACME, not both")
        }
        let email = acme.optional("email", Names.email)
        let directory = acme.value("directory", default: Self.directory(Config.ACME.letsEncrypt)) { text in
            switch text {
            case "letsencrypt": return .success(Self.directory(Config.ACME.letsEncrypt))
            case "letsencrypt-staging": return .success(Self.directory(Config.ACME.letsEncryptStaging))
            default:
                return HTTPURL.parse(text, allowPath: true, allowQuery: false).flatMap { url in
                    url.isHTTPS || url.isLoopback ? .success(url)
                        : .failure(ValueError("\(quoted(text)) must be https (an ACME directory is fetched over TLS)"))
                }
            }
        }
        let domains = acme.list("domains", default: publicURL.map { [$0.host] } ?? []) { text in
            let lower = text.lowercased()
            return HostName.isValidDNSName(lower) && !HostName.isIPLiteral(lower) && lower.contains(".") && !lower.hasPrefix("*")
                ? .success(lower)
                : .failure(ValueError("\(quoted(text)) is not a DNS name a CA issues for (no IP addresses, no wildcards)"))
        }
        if isSet, let publicURL, !domains.contains(publicURL.host), acme.contains("domains") {
            reader.report(.invalidValue, "tls.acme.domains", at: acme.location(of: "domains"),
                          "does not list \(publicURL.host), public_url's host: browsers would refuse the certificate")
        }
        if isSet, let publicURL, !publicURL.isHTTPS {
            reader.report(.invalidValue, "tls.acme", at: tls.location(of: "acme"),
                          "set while public_url is \(publicURL.origin): make public_url https://")
        }
        if Set(domains).count != domains.count || domains.count > 100 {
            reader.report(.invalidValue, "tls.acme.domains", at: acme.location(of: "domains"),
                          "lists a domain twice or more than 100")
        }
        let challenge = acme.value("challenge", default: Config.ACME.Challenge.tlsALPN01, Parse.oneOf(Config.ACME.Challenge.self))
        let httpListen = acme.value("http_listen", default: ListenAddress.tcp(host: "0.0.0.0", port: 80)) {
            ListenAddress.parse($0, baseDirectory: baseDirectory)
        }
        if isSet { warnChallengePath(acme, challenge: challenge, httpListen: httpListen, listen: listen) }
        if isSet, challenge == .http01, httpListen == listen {
            reader.report(.invalidValue, "tls.acme.http_listen", at: acme.location(of: "http_listen"),
                          "is listen itself; the plain listener for http-01 needs a port of its own (80)")
        }
        let eabKeyID = acme.optional("eab_kid", Parse.nonEmpty)
        let eabHMACKey = acme.optional("eab_hmac_key") { [environment, baseDirectory] text in
            Secret.resolve(text, environment: environment, baseDirectory: baseDirectory).flatMap { secret in
                Base64URLText.decode(secret.string.trimmingCharacters(in: .whitespacesAndNewlines)).map {
                    .success(Secret(bytes: $0, source: secret.source))
                } ?? .failure(ValueError("the EAB HMAC key from \(secret.source) is not base64url"))
            }
        }
        if (eabKeyID == nil) != (eabHMACKey == nil), acme.contains("eab_kid") || acme.contains("eab_hmac_key") {
            acme.requireMissing(eabKeyID == nil ? "eab_kid" : "eab_hmac_key", because: "external account binding needs both")
        }
        var config = Config.ACME(
            email: email, directory: directory, domains: domains, httpListen: httpListen,
            storage: acme.value("storage", default: "/var/lib/sidecar/acme", Parse.path(baseDirectory: baseDirectory)))
        config.challenge = challenge
        config.keyType = acme.value("key_type", default: Config.ACME.KeyType.ecdsaP256, Parse.oneOf(Config.ACME.KeyType.self))
        config.shareViaStore = acme.bool("share_via_store", default: false)
        config.eabKeyID = eabKeyID
        config.eabHMACKey = eabHMACKey
        config.caFile = acme.optional("ca_file", Parse.readableFile(baseDirectory: baseDirectory))
        return isSet && !domains.isEmpty ? config : nil
    }

    private static func directory(_ text: String) -> HTTPURL {
        // Both constants parse; a failure here would be a typo in them, caught by the tests.
        (try? HTTPURL.parse(text, allowPath: true, allowQuery: false).get())!
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
