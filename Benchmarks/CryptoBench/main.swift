// crypto-bench: per-operation cost of the crypto on the request and login paths.
// Run: swift run -c release crypto-bench
import Foundation
import SidecarCrypto

func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Runs `body` for about `seconds` and prints ops/s and µs/op.
func measure(_ name: String, seconds: Double = 1.0, _ body: () throws -> Void) rethrows {
    for _ in 0..<100 { try body() } // warm-up
    let deadline = UInt64(seconds * 1e9)
    let start = nowNanoseconds()
    var iterations = 0
    while nowNanoseconds() - start < deadline {
        for _ in 0..<50 { try body() }
        iterations += 50
    }
    let elapsed = Double(nowNanoseconds() - start) / 1e9
    let perOp = elapsed / Double(iterations) * 1e6
    let name = name.padding(toLength: 28, withPad: " ", startingAt: 0)
    print("\(name) \(String(format: "%10.0f", Double(iterations) / elapsed)) ops/s  \(String(format: "%8.2f", perOp)) µs/op")
}

let cookieName = "__Host-sidecar"
let sealer = try SessionSealer(secrets: [SecureRandom.bytes(32), SecureRandom.bytes(32)])
let session = Session(
    id: try Session.newID(), subject: "001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433",
    email: "ep9ks2tnph@privaterelay.appleid.com", emailVerified: true, privateEmail: true, name: "Maria Ruiz",
    issuedAt: 1_700_000_000, expiresAt: 1_700_604_800, idleDeadline: 1_700_086_400,
    lastRevalidation: 1_700_000_000, appleRefreshToken: String(repeating: "r", count: 64))
let cookie = Array(try sealer.sealSession(session, cookieName: cookieName).utf8)

let rsa = try RSAPrivateKey.generate()
let keys = JWKSet(keys: ["k1": rsa.publicKey])
let claims: [String: JSONValue] = [
    "iss": .string("https://appleid.apple.com"), "aud": .string("com.example.web"), "sub": .string(session.subject),
    "iat": .integer(1_700_000_000), "exp": .integer(1_700_086_400), "nonce": .string("n"),
]
let idToken = try JWTSigner.sign(claims: claims, keyID: "k1", key: .rs256(rsa))
let verifier = AppleIDTokenVerifier(issuer: "https://appleid.apple.com", audiences: ["com.example.web"])
let p256 = try P256PrivateKey.generate()
let message = Array(idToken.utf8.prefix(300))

print("cookie: \(cookie.count) bytes")
try cookie.withUnsafeBufferPointer { buffer in
    try measure("session open") { _ = try sealer.open(buffer, context: cookieName, now: 1_700_000_100) }
}
let opener = try SessionOpener(sealer, context: cookieName)
try cookie.withUnsafeBufferPointer { buffer in
    try measure("session open (worker opener)") { _ = try opener.open(buffer, now: 1_700_000_100) }
}
try measure("session seal") { _ = try sealer.sealSession(session, cookieName: cookieName) }
let signature = try rsa.sign(message)
measure("RS256 verify") { guard rsa.publicKey.isValidSignature(signature, for: message) else { fatalError("verify") } }
try measure("Apple id_token verify") {
    _ = try verifier.verify(idToken, keys: keys, now: 1_700_000_100, nonce: .oneOf(["n"]))
}
try measure("RS256 sign (emulator)", seconds: 0.5) { _ = try rsa.sign(message) }
try measure("ES256 sign") { _ = try p256.sign(message) }
try measure("client secret mint") {
    _ = try AppleClientSecret.mint(teamID: "ABCDE12345", clientID: "com.example.web", keyID: "XYZ123ABCD", key: p256,
                                   audience: "https://appleid.apple.com", issuedAt: 1_700_000_000, lifetime: 3600)
}
