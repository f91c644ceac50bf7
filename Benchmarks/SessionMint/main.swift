// session-mint: N distinct sessions the sidecar accepts in production, for benchmarks with
// many users (Benchmarks/cases.d/sessions.sh). Not part of the product.
//
//   session-mint --config sidecar.yaml --template '<cookie value from a real login>' --count N
//
// The template is a session the sidecar issued through the emulator; it is opened with the
// configuration's secrets exactly as the sidecar opens it (so a wrong secret or a forged value
// fails here). Each minted session copies it with a fresh random id and a distinct subject of
// the same length, and is sealed by the sidecar's own sealing code with the first configured
// secret, bound to the configured cookie name. Prints `cookie_name=value` lines.
import Foundation
import SidecarConfig
import SidecarCrypto

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("session-mint: \(message)\n".utf8))
    exit(2)
}

var configPath: String?, template: String?, count = 1
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--config": configPath = arguments.next()
    case "--template": template = arguments.next()
    case "--count": count = arguments.next().flatMap { Int($0) } ?? 0
    default: fail("unknown argument \(argument)")
    }
}
guard let configPath, let template, count > 0 else {
    fail("usage: session-mint --config FILE --template COOKIE_VALUE --count N")
}

let config: Config
do {
    config = try Config.load(file: configPath)
} catch {
    fail("\(error)")
}
var secrets: [[UInt8]] = []
for secret in config.session.secrets where !secrets.contains(secret.bytes) { secrets.append(secret.bytes) }
let cookieName = config.session.cookieName
let now = Int64(Date().timeIntervalSince1970)
do {
    let sealer = try SessionSealer(secrets: secrets)
    let opened = try sealer.open(Array(template.utf8), context: cookieName, now: now)
    let base = opened.payload
    var output = ""
    output.reserveCapacity(count * (template.count + cookieName.count + 2))
    for index in 0..<count {
        var session = base
        session.id = try Session.newID()
        // Apple's subjects read `000000.<32 hex>.0000`; keep the template's length and shape.
        let suffix = String(index, radix: 16)
        session.subject = String(base.subject.dropLast(suffix.count)) + suffix
        output += cookieName + "=" + (try sealer.sealSession(session, cookieName: cookieName)) + "\n"
    }
    FileHandle.standardOutput.write(Data(output.utf8))
} catch {
    fail("\(error)")
}
