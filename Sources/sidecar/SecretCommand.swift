import ArgumentParser
import SidecarCrypto

/// `sidecar secret`: a fresh cookie secret for `session.secrets`.
struct SecretCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Print a fresh random cookie secret (base64 of 32 bytes) for session.secrets.")

    func run() throws {
        do {
            print(Base64.encode(try SecureRandom.bytes(32)))
        } catch {
            throw RuntimeFailure("cannot read random bytes: \(error)")
        }
    }
}

/// A failure at run time rather than in the config or usage: exit code 2.
struct RuntimeFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
