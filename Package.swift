// swift-tools-version:6.0
// SIWA Sidecar — Sign in with Apple reverse-proxy sidecar on libevent and OpenSSL.
import PackageDescription

/// Release builds of the modules on the per-request path skip Swift's dynamic exclusivity
/// checks (a runtime call per access to a class's stored property: ~7 % of the proxy's
/// user-space instructions per request, measured with callgrind). Debug builds (`swift test`)
/// keep them, so an overlapping access still traps there.
let hotPathSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release)),
]

/// Release builds leave unoptimized the modules whose code runs once per process or reload and
/// never per request: SidecarConfig (reading sidecar.yaml; the values the request path reads,
/// such as IPAddress and CIDR, live in SidecarHTTP) and the CLI (its commands start the
/// optimized proxy, or wait on Apple and the disk). Both sit on the release build's critical
/// path, where nothing compiles beside them: optimized, SidecarConfig took 29 s and the CLI
/// 10 s of a 120-second clean build on two cores; unoptimized, 6 s and 4 s. What it costs:
/// `sidecar check` of a full configuration runs 167 instead of 145 million instructions
/// (callgrind; about 5 ms more at start and on each reload), and none per request (the proxy's
/// calls into SidecarConfig are all made while it starts; callgrind's instructions per request
/// moved by under 0.5 %, Benchmarks/RESULTS.md).
let startupOnlySettings: [SwiftSetting] = [
    .unsafeFlags(["-Onone"], .when(configuration: .release)),
]

let package = Package(
    name: "sidecar",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "sidecar", targets: ["sidecar"]),
        .executable(name: "http-fuzz", targets: ["HTTPFuzz"]),
        .executable(name: "crypto-bench", targets: ["CryptoBench"]),
        .executable(name: "session-mint", targets: ["SessionMint"]),
    ],
    // Exact versions pin what the shipped binary is built from: Package.resolved is not committed
    // because the local package mirror's commit ids differ from GitHub's.
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", exact: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
    ],
    targets: [
        // C shims: thin system-library modules over Debian's libevent and OpenSSL 3.
        .systemLibrary(
            name: "CEvent", path: "Sources/CEvent",
            providers: [.apt(["libevent-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CNGHTTP2",
            providers: [.apt(["libnghttp2-dev"])]),

        // Crypto & JOSE: primitives over OpenSSL EVP, JWS/JWT, Apple tokens, sealed sessions.
        .target(name: "SidecarCrypto", dependencies: ["COpenSSL", "CByteScan"], swiftSettings: hotPathSettings),
        // Vector byte-class scans for the head parser, base64url blocks for sessions (SSE2/SSSE3, portable fallback).
        .target(name: "CByteScan", cSettings: [.unsafeFlags(["-O2"])]),
        // Many sockets' sends in one system call (io_uring through Debian's liburing).
        .target(name: "CSendRing", cSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("uring")]),
        .target(name: "CEventMemory", cSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("event_core")]),
        // HTTP/1.1 codec and URL/path rules: no I/O.
        .target(name: "SidecarHTTP", dependencies: ["CByteScan"], swiftSettings: hotPathSettings),
        // HTTP/2 sessions over libnghttp2: frames in, typed request heads and stream events out.
        .target(name: "SidecarHTTP2", dependencies: ["CNGHTTP2", "CByteScan", "SidecarHTTP"], swiftSettings: hotPathSettings),
        // Event loop & sockets on libevent.
        .target(
            name: "SidecarEvent", dependencies: ["CEvent", "CEventMemory", "COpenSSL", "CSendRing", "SidecarHTTP"],
            swiftSettings: hotPathSettings),
        // Typed configuration read from sidecar.yaml. It reads the Apple key with the crypto
        // module, so a key `run` could not sign with is a config error with its line and column.
        .target(
            name: "SidecarConfig",
            dependencies: [.product(name: "Yams", package: "Yams"), "SidecarHTTP", "SidecarCrypto", "SidecarRESP"],
            swiftSettings: startupOnlySettings),
        // The outgoing HTTPS client (one request per connection, verified TLS, one deadline), first
        // written for Apple and used by ACME too; its types keep the names they were born with.
        .target(name: "SidecarHTTPClient", dependencies: ["SidecarEvent", "SidecarHTTP", "COpenSSL"]),
        // Apple client and the Apple emulator.
        .target(
            name: "SidecarApple",
            dependencies: [
                "SidecarCrypto", "SidecarHTTP", "SidecarEvent", "SidecarHTTPClient",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // ACME (RFC 8555, 8737, 9773): certificates obtained and renewed from a CA, on a thread of
        // its own with the project's HTTPS client; challenge answers; storage and the renewal schedule.
        .target(
            name: "SidecarACME",
            dependencies: [
                "SidecarCrypto", "SidecarEvent", "SidecarHTTPClient", "SidecarStore", "SidecarRESP", "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
            ]),
        // What outlives a request: revocations, single-use keys, notification forwards (memory | file | redis).
        // Redis (`redis://`, `rediss://`, either behind Sentinel) on the project's own loop and TLS layer,
        // speaking the RESP codec of SidecarRESP.
        .target(
            name: "SidecarStore", dependencies: ["SidecarCrypto", "SidecarEvent", "COpenSSL", "SidecarRESP"],
            swiftSettings: hotPathSettings),
        // Redis without I/O: its wire format (RESP2: commands out, replies parsed), fuzzed beside the
        // HTTP codecs, and its addresses (one server or Sentinel's), which the configuration
        // parses. A module of its own so that the fuzz target compiles no more than it fuzzes, and
        // the configuration need not wait for the store's compile (they compiled in turn, on
        // the release build's critical path).
        .target(name: "SidecarRESP"),
        // Reverse proxy: connections, upstream pool, header rewriting, auth endpoints, admin.
        .target(
            name: "SidecarProxy",
            dependencies: [
                "SidecarCrypto", "SidecarHTTP", "SidecarHTTP2", "SidecarEvent", "SidecarConfig", "SidecarApple",
                "SidecarStore", "COpenSSL", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: hotPathSettings),
        // CLI.
        .executableTarget(
            name: "sidecar",
            dependencies: [
                "SidecarProxy", "SidecarConfig", "SidecarCrypto", "SidecarApple", "SidecarEvent", "SidecarHTTP",
                "SidecarStore", "SidecarACME",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: startupOnlySettings),
        // libFuzzer target for the request-head parser, the chunked decoder, the Redis reply parser
        // and HTTP/2 sessions (frames to translated HTTP/1.1 heads).
        .executableTarget(
            name: "HTTPFuzz", dependencies: ["SidecarHTTP", "SidecarHTTP2", "SidecarRESP"],
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]),

        // Crypto micro-benchmarks: swift run -c release crypto-bench
        .executableTarget(name: "CryptoBench", dependencies: ["SidecarCrypto"], path: "Benchmarks/CryptoBench"),
        .executableTarget(
            name: "SessionMint", dependencies: ["SidecarConfig", "SidecarCrypto"], path: "Benchmarks/SessionMint"),

        .testTarget(name: "SidecarCryptoTests", dependencies: ["SidecarCrypto"]),
        .testTarget(name: "SidecarHTTPTests", dependencies: ["SidecarHTTP"]),
        .testTarget(name: "SidecarHTTP2Tests", dependencies: ["SidecarHTTP2", "CNGHTTP2"]),
        .testTarget(name: "SidecarEventTests", dependencies: ["SidecarEvent", "CEventMemory"]),
        .testTarget(name: "SidecarConfigTests", dependencies: ["SidecarConfig", "SidecarStore", "SidecarRESP", "SidecarHTTP"]),
        .testTarget(name: "SidecarStoreTests", dependencies: ["SidecarStore", "SidecarConfig", "SidecarRESP"]),
        .testTarget(
            name: "SidecarProxyTests", dependencies: ["SidecarProxy", "SidecarHTTP", "CEvent", "SidecarStore", "SidecarEvent", "COpenSSL"]),
        .testTarget(name: "SidecarAppleTests", dependencies: ["SidecarApple"], exclude: ["Fixtures"]),
        .testTarget(name: "SidecarACMETests", dependencies: ["SidecarACME", "SidecarHTTPClient", "SidecarCrypto", "COpenSSL"]),
        .testTarget(name: "SidecarEmulatorTests", dependencies: ["SidecarApple"]),
    ]
)

/// `scripts/test` compiles the package once, in release (with `-enable-testing`): the unit tests
/// run against the optimized modules that ship. The tests' own modules need no optimizing:
/// unoptimized they cost less than half the CPU time they do optimized (about 110 against 245
/// CPU-seconds, which made one release build dearer than a debug and a release build
/// together). Each is still compiled whole (release's default), one compiler process per
/// module: file by file, every batch parsed and checked the module's other files again (the
/// ten test modules recompiled: 63–70 against 29–34 CPU-seconds, two runs each).
for target in package.targets where target.type == .test {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .unsafeFlags(["-Onone"], .when(configuration: .release))
        ]
}
