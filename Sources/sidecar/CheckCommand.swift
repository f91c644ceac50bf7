import ArgumentParser
import Foundation
import Glibc
import SidecarConfig
import SidecarProxy

/// `sidecar check` — validate a configuration, its key files and secrets.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file, its key files and secrets, then print a summary.",
        discussion: """
            Loads the file exactly as `sidecar run` does, through the same code: every key is \
            checked, env: and file: secrets are resolved, the Apple key is read and must be a \
            P-256 key, and the sign-in settings are built. SIDECAR_* variables override the \
            file's keys as they do for `run` (`--config none`: no file at all). Errors name the \
            file, key, line and column (or the variable) and go to stderr with exit status 1; \
            otherwise a summary (never secret values), the keys set by the environment and any \
            warnings are printed, and the exit status is 0. With --online it then asks Apple: its \
            key set must answer, and each Services ID's client secret must be accepted (a token \
            request with a code that cannot exist gets invalid_grant for a good secret, \
            invalid_client when key id, team id, Services ID and key do not belong together); a \
            failure is exit status 1.
            """)

    @Option(name: .long, help: ArgumentHelp(
        "The configuration file, or none to take every setting from SIDECAR_* variables.", valueName: "file"))
    var config: String = "sidecar.yaml"

    @Flag(name: .long, help: "Also ask Apple: its key set answers and it accepts each Services ID's client secret.")
    var online = false

    func run() throws {
        let prepared: ServingConfiguration
        do {
            prepared = try ServingConfiguration.load(file: config, shared: AuthShared())
        } catch {
            let count = error.lines.count
            writeStandardError(error.description
                + "\n\(ServingConfiguration.label(config)): \(count) error\(count == 1 ? "" : "s")\n")
            // Exit here: the messages are complete, the root would add its own line for a thrown ExitCode.
            Glibc.exit(1)
        }
        var extra: [(String, String)] = []
        if let tls = prepared.options.tls { extra.append(("tls", tls.summary)) }
        if let assertion = prepared.options.auth?.assertionSummary {
            // Without a key yet, `check` only signed with a throw-away key: its id means nothing.
            extra.append(("assertion", prepared.config.assertion.privateKey == nil
                ? assertion.replacingOccurrences(of: #"kid [A-Za-z0-9_-]+"#, with: "kid of the key generated at start", options: .regularExpression)
                : assertion))
        }
        print(Self.summary(of: prepared.config, extra: extra), terminator: "")
        for warning in prepared.warningLines { writeStandardError(warning + "\n") }
        if let warning = prepared.descriptorWarning {
            writeStandardError("\(ServingConfiguration.label(config)): warning: \(warning)\n")
        }
        if online { try checkOnline(prepared.config) }
    }

    private func checkOnline(_ config: Config) throws {
        let findings: [OnlineCheck.Finding]
        do {
            findings = try OnlineCheck(apple: config.apple, redirectURI: config.redirectURI).run()
        } catch {
            writeStandardError("online: \(error)\n")
            throw ExitCode(1)
        }
        for finding in findings {
            if finding.ok { print("online: " + finding.line) } else { writeStandardError("online: error: " + finding.line + "\n") }
        }
        if findings.contains(where: { !$0.ok }) { throw ExitCode(1) }
    }

    static func summary(of config: Config, extra: [(String, String)] = []) -> String {
        var rows: [(String, String)] = [
            ("listen", "\(config.listen)\(config.tls == nil && config.acme == nil ? "" : " (TLS)"), \(config.workers) worker\(config.workers == 1 ? "" : "s")"
                + (config.proxyProtocol
                    ? ", PROXY protocol from " + config.trustedProxies.map(\.description).joined(separator: ", ") : "")),
            ("public_url", config.publicURL.origin),
            ("redirect_uri", config.redirectURI),
            ("upstream", config.upstream.description),
            ("admin", config.admin.listen.description),
            ("apple", "team \(config.apple.teamID), client \(config.apple.clientIDs.joined(separator: ", ")), key \(config.apple.keyID) at \(config.apple.baseURL)"),
            ("native", config.apple.nativeAudiences.isEmpty ? "off (no apple.native_audiences)"
                : config.apple.nativeAudiences.joined(separator: ", ")
                    + (config.apple.nativeRequireNonce ? " (nonce required)" : " (nonce optional)")),
            ("cookie", config.session.cookieName + (config.session.domain.map { ", domain \($0)" } ?? "")),
            ("secrets", "\(config.session.secrets.count) (\(config.session.secrets.map(\.source).joined(separator: ", ")))"),
        ]
        if !config.apple.androidPackages.isEmpty {
            // The relay URL must be registered at Apple as a Return URL of the Services ID.
            rows.insert(("android", config.publicURL.origin + config.routes.prefix + "/android/callback for "
                            + config.apple.androidPackages.joined(separator: ", ")), at: rows.count - 2)
        }
        // Who may sign in and what needs no session: what an operator most often gets wrong.
        let access = config.access
        var allowed: [String] = []
        if !access.allowedEmails.isEmpty { allowed.append("emails " + access.allowedEmails.joined(separator: ", ")) }
        if !access.allowedEmailDomains.isEmpty { allowed.append("domains " + access.allowedEmailDomains.joined(separator: ", ")) }
        if !access.allowedSubjects.isEmpty { allowed.append("subjects " + access.allowedSubjects.joined(separator: ", ")) }
        rows.append(("access", (allowed.isEmpty ? "any Apple user" : allowed.joined(separator: "; "))
                        + (access.allowPrivateRelay ? "" : "; no private relay addresses")))
        rows.append(("public paths", access.publicPaths.isEmpty ? "none" : access.publicPaths.joined(separator: ", ")))
        rows.append(("api paths", access.apiPaths.isEmpty ? "none" : access.apiPaths.joined(separator: ", ")))
        if !config.rules.isEmpty {
            let count = config.rules.count
            rows.append(("rules", "\(count) rule\(count == 1 ? "" : "s"), first match wins, before the lists above"))
        }
        for site in config.sites {
            // Each site's own sign-in is a redirect_uri to register with its Services ID.
            let signIn = site.redirectURI(prefix: config.routes.prefix).map {
                "sign-in \($0) with \(site.clientID ?? config.apple.clientID)"
            } ?? "sign-in through public_url"
            rows.append(("site \(site.name)", site.hosts.joined(separator: ", ")
                            + (config.defaultSite == site.name ? " and any other host" : "") + "; \(signIn)"))
        }
        if !config.sites.isEmpty, config.defaultSite == nil { rows.append(("other hosts", "421 Misdirected Request")) }
        for upstream in config.upstreams {
            rows.append(("upstream \(upstream.name)", "\(upstream.target) (timeout \(upstream.timeout), connect \(upstream.connectTimeout))"))
        }
        // Apple's portal asks for it under the Services ID's "Server-to-Server Notification Endpoint".
        rows.append(("notifications", config.publicURL.origin + config.routes.prefix + "/apple/notifications"
                        + " (register at Apple)"))
        rows.append(("pages", (config.pages.signIn ? "sign-in page" : "redirect to sign in")
                        + ", " + (config.pages.templates.map { "templates from \($0)" } ?? "built-in templates")))
        if let acme = config.acme {
            // Where the CA must reach the sidecar: what an operator has to open in the firewall.
            let path = acme.challenge == .http01 ? "http-01 on \(acme.httpListen)" : "tls-alpn-01 on \(config.listen)"
            rows.append(("acme", "\(acme.domains.joined(separator: ", ")) from \(acme.directory), \(path), stored in "
                            + (acme.shareViaStore ? "revocations.store (shared)" : acme.storage)))
        }
        rows += extra
        if !config.environment.isEmpty {
            let count = config.environment.count
            rows.append(("environment", "\(count) key\(count == 1 ? "" : "s") from SIDECAR_* variables"
                            + (config.file == "environment" ? " (no file)" : ", the rest from \(config.file)")))
        }
        let width = rows.map(\.0.count).max() ?? 0
        return "\(config.file): OK\n" + rows.map { name, value in
            "  " + name + String(repeating: " ", count: width - name.count + 2) + value + "\n"
        }.joined() + config.environment.map { "    \($0)\n" }.joined()
    }
}
