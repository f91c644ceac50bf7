import ArgumentParser
import Foundation
import SidecarConfig
import SidecarCrypto

/// `sidecar users revoke|show SUB`: a running sidecar's admin listener (`/users/…`), asked
/// with `admin.token` from the same configuration.
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Sign a user out everywhere, or show what the sidecar knows of one.",
        subcommands: [UsersRevokeCommand.self, UsersShowCommand.self])
}

/// What both subcommands take: the configuration (for admin.listen and admin.token) and the user.
struct UsersTarget: ParsableArguments {
    @Argument(help: ArgumentHelp("The user's Apple id (sub), as X-Auth-User-Id carries it.", valueName: "sub"))
    var subject: String

    @Option(name: .long, help: ArgumentHelp("The configuration file, or none.", valueName: "file"))
    var config: String = "sidecar.yaml"

    @Option(name: .long, help: ArgumentHelp(
        "The admin listener to ask, host:port or unix:/path (default: admin.listen).", valueName: "address"))
    var admin: String?

    /// Sends the call; its JSON answer when 200, else a failure that says why.
    func call(_ method: String, _ suffix: String) throws -> [String: JSONValue] {
        let loaded: Config
        do { loaded = try Config.load(file: ServingConfiguration.configFile(config)) } catch {
            writeStandardError(error.errors.map(\.description).joined(separator: "\n") + "\n")
            throw ExitCode(1)
        }
        var address = loaded.admin.listen
        if let admin {
            guard let parsed = ListenAddress.parsed(admin) else {
                writeStandardError("--admin \(admin): use host:port, [::1]:port or unix:/path\n")
                throw ExitCode(1)
            }
            address = parsed
        }
        guard !subject.isEmpty, subject.utf8.count <= 255,
              subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "%") })
        else {
            writeStandardError("\(subject): not a user id (Apple's sub: letters, digits, . _ -)\n")
            throw ExitCode(1)
        }
        let answer = try AdminClient(address: address, token: loaded.admin.token)
            .send(method: method, path: "/users/\(subject)\(suffix)")
        let body = (try? JSONDecoder().decode(JSONValue.self, from: Data(answer.body.utf8)))?.objectValue ?? [:]
        switch answer.status {
        case 200: return body
        case 401:
            throw RuntimeFailure("the admin listener at \(address) refused the call (401): "
                + (loaded.admin.token == nil ? "it requires admin.token, which this configuration does not set"
                    : "admin.token is not the running sidecar's"))
        default:
            let reason = body["reason"]?.stringValue ?? body["error"]?.stringValue ?? answer.body
            throw RuntimeFailure("the admin listener at \(address) answered \(answer.status): \(reason)")
        }
    }
}

struct UsersRevokeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "End every session and bearer token of a user, on every replica.",
        discussion: """
            Asks the running sidecar (admin.listen, with admin.token) to revoke the user
            by their Apple id, as an Apple consent-revoked event does: every session and
            bearer token issued up to now is refused from then on, on every replica
            sharing the store (within a second with Redis). The user may sign in again.
            With --apple (and users.keep_refresh_tokens on), the user's latest Apple
            refresh token is first revoked at Apple; if Apple cannot be reached or
            refuses, nothing is revoked and the command can be run again.
            The call is an audit line in the sidecar's log. Exit status: 0 revoked, 1
            invalid configuration or user id, 2 the sidecar could not be asked or
            refused.
            """)

    @OptionGroup var target: UsersTarget

    @Flag(name: .long, help: "Also revoke the user's kept Apple refresh token at Apple (users.keep_refresh_tokens).")
    var apple = false

    func run() throws {
        let body = try target.call("POST", apple ? "/revoke?apple=1" : "/revoke")
        let cutoff = body["revoked_before_ms"]?.integerValue ?? 0
        print("revoked \(target.subject): every session and bearer token issued up to \(UsersShowCommand.moment(cutoff)) "
            + "is refused, on every replica")
        guard apple else { return }
        switch body["apple"]?.stringValue {
        case "revoked"?:
            print("apple: the refresh token of \(body["apple_client_id"]?.stringValue ?? "the app") is revoked at Apple")
        case "no_refresh_token"?:
            print("apple: no refresh token is kept for this user (none signed in since users.keep_refresh_tokens was on)")
        case let other:
            print("apple: \(other ?? "not answered")")
        }
    }
}

struct UsersShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show what the running sidecar knows of a user: revocation, last sign-in.",
        discussion: """
            Asks the running sidecar (admin.listen, with admin.token). Exit status: 0
            shown, 1 invalid configuration or user id, 2 the sidecar could not be asked
            or refused.
            """)

    @OptionGroup var target: UsersTarget

    func run() throws {
        let body = try target.call("GET", "")
        var rows: [(String, String)] = [("sub", target.subject), ("store", body["store"]?.stringValue ?? "")]
        if let cutoff = body["revoked_before_ms"]?.integerValue {
            rows.append(("revoked", "sessions issued up to \(Self.moment(cutoff)) are refused"))
        } else {
            rows.append(("revoked", "no"))
        }
        if let last = body["last_sign_in"]?.objectValue, let at = last["at_ms"]?.integerValue {
            rows.append(("last sign-in", "\(Self.moment(at)) (\(last["platform"]?.stringValue ?? "unknown"))"))
        } else if let why = body["last_sign_in_unknown"]?.stringValue {
            rows.append(("last sign-in", why))
        } else {
            rows.append(("last sign-in", "none remembered"))
        }
        if let kept = body["refresh_token_kept_at_ms"] {  // only with users.keep_refresh_tokens
            rows.append(("apple token", kept.integerValue.map { "kept from the sign-in of \(Self.moment($0)) (--apple revokes it)" }
                ?? "none kept (--apple would revoke nothing at Apple)"))
        }
        let width = rows.map(\.0.count).max() ?? 0
        print(rows.map { "  " + $0.0 + String(repeating: " ", count: width - $0.0.count + 2) + $0.1 }.joined(separator: "\n"))
    }

    static func moment(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000))
    }
}
