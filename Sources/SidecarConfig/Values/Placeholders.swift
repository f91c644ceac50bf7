/// The stand-ins the Debian package installs so that its `sidecar.yaml` is complete: a
/// configuration still holding one could only ever answer 502 (Apple refuses every client
/// secret it signs), so `check` and `run` refuse it, saying what belongs there. The unit's
/// `ExecStartPre=sidecar check` thereby keeps such a service from starting.
enum Placeholders {
    /// The package's `apple.team_id` and `apple.key_id` (valid in form, so only named here).
    static let appleIDs: Set<String> = ["TEAMID0000", "KEYID00000"]

    /// The package's stand-in key is `/etc/sidecar/AuthKey_placeholder.p8`, made by its postinst.
    static func isStandInKey(_ path: String) -> Bool {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.lowercased().contains("placeholder")
    }

    /// `apple.team_id`: a valid id that is not the package's.
    static func teamID(_ text: String) -> Result<String, ValueError> {
        Names.appleID(text, what: "team id").flatMap {
            appleID($0, what: "Team ID", whereToFind: "top right of developer.apple.com/account")
        }
    }

    /// `apple.key_id`: a valid id that is not the package's.
    static func keyID(_ text: String) -> Result<String, ValueError> {
        Names.appleID(text, what: "key id").flatMap {
            appleID($0, what: "Sign in with Apple key's Key ID", whereToFind: "Keys, in Certificates, Identifiers & Profiles")
        }
    }

    private static func appleID(_ text: String, what: String, whereToFind: String) -> Result<String, ValueError> {
        guard appleIDs.contains(text) || text.contains("REPLACE") else { return .success(text) }
        return .failure(ValueError("\(quoted(text)) is a placeholder: put your \(what) here (\(whereToFind))"))
    }

    static func appleKey(_ path: String) -> Result<String, ValueError> {
        guard isStandInKey(path) else { return .success(path) }
        return .failure(ValueError(
            "\(path) is the package's stand-in key, which Apple rejects: install the .p8 downloaded with your "
                + "Sign in with Apple key (install -m 0640 -o root -g sidecar AuthKey_<key id>.p8 /etc/sidecar/) "
                + "and name it here"))
    }
}
