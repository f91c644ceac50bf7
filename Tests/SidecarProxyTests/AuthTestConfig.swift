import Logging
import SidecarConfig
import SidecarCrypto
import SidecarEvent

@testable import SidecarProxy

/// A configuration with sign-in set up, for tests of the authenticator and its settings: a fresh
/// Apple key, `secret` as the one session secret, `apple` and `session` lines added under
/// `apple:` and `session:`, and `extra` (top-level YAML, e.g. an `assertion:` or `headers:`
/// block) at the end.
enum AuthTestConfig {
    static func parse(
        secret: String, publicURL: String = "http://127.0.0.1:8080", apple: [String] = [], session: [String] = [],
        extra: String = ""
    ) throws -> Config {
        let key = try P256PrivateKey.generate().pkcs8PEM()
        let yaml = """
            listen: 127.0.0.1:8080
            public_url: \(publicURL)
            upstream: http://127.0.0.1:3000
            apple:
              team_id: ABCDE12345
              client_id: com.example.web
              key_id: XYZ123ABCD
              private_key: env:APPLE_KEY
            """
            + apple.map { "\n  \($0)" }.joined() + """

            session:
              secrets: [env:SECRET]
            """
            + session.map { "\n  \($0)" }.joined() + "\n" + extra
        return try Config.parse(yaml: yaml, environment: ["APPLE_KEY": key, "SECRET": secret])
    }

    /// An authenticator on its own loop, with a metrics recorder for one worker.
    static func authenticator(_ settings: AuthSettings) throws -> Authenticator {
        let loop = try EventLoop()
        return try Authenticator(loop: loop, settings: settings, upstreamTimeoutMs: 5_000, metrics: metrics(loop))
    }

    /// A worker's metrics recorder on `loop`.
    static func metrics(_ loop: EventLoop) -> MetricsRecorder {
        MetricsRecorder(loop: loop, board: MetricsBoard(workers: 1), readiness: Readiness(workers: 1), worker: 0)
    }
}

/// The parts of the sign-in side every other part is built on, wired as `Authenticator` wires
/// them, over one loop: for tests of one part alone (a web sign-in, the session endpoints, the
/// native endpoints). `apple`: lines added under `apple:`.
struct AuthTestParts {
    let loop: EventLoop
    let settings: AuthSettings
    let metrics: MetricsRecorder
    let apple: AppleCalls
    let revalidator: SessionRevalidator
    let sessions: SessionReader

    init(apple appleLines: [String] = []) throws {
        let config = try AuthTestConfig.parse(
            secret: Base64.encode([UInt8](repeating: 0x11, count: 32)), apple: appleLines)
        settings = try AuthSettings(config: config, shared: AuthShared())
        loop = try EventLoop()
        metrics = AuthTestConfig.metrics(loop)
        let logger = Logger(label: "test")
        apple = try AppleCalls(loop: loop, settings: settings, upstreamTimeoutMs: 5_000, metrics: metrics, logger: logger)
        revalidator = SessionRevalidator(settings: settings, apple: apple, metrics: metrics, logger: logger)
        sessions = try SessionReader(settings: settings, metrics: metrics, logger: logger, revalidator: revalidator)
    }
}
