import ArgumentParser
import SidecarCrypto

/// `sidecar secret`: a fresh cookie secret for `session.secrets`.
struct SecretCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Print a fresh random cookie secret (base64 of 32 bytes) for session.secrets.",
        discussion: """
            Keep it in a file only root and the service can read, named with
            file: (the Debian package makes /etc/sidecar/cookie-secret so):
              (umask 027; sidecar secret > /etc/sidecar/cookie-secret)
              chgrp sidecar /etc/sidecar/cookie-secret
              session.secrets: [file:/etc/sidecar/cookie-secret]
            Where secrets arrive as environment variables (a container, a
            Kubernetes Secret), use env:SIDECAR_COOKIE_SECRET instead. Replicas
            share one secret; to rotate, put a new one first in the list.
            """)

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
