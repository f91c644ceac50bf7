import ArgumentParser
import Glibc
import Logging
import SidecarApple
import SidecarConfig
import SidecarCrypto
import SidecarEvent
import SidecarHTTP
import SidecarProxy

/// `sidecar demo` — zero set-up: an ES256 client key and a cookie secret in a
/// temporary directory (removed on every way out, see `DemoDirectory`), the Apple emulator
/// in-process, a small demo upstream, and the sidecar in front of it, all on loopback. The
/// sidecar is `http://localhost:<port>` and the emulator `http://127.0.0.1:<port>`: different
/// sites, as with the real Apple, so the cross-site form_post is exercised for real.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Try Sign in with Apple locally: sidecar, Apple emulator and a demo app on loopback.")

    @Option(help: "Port of the sidecar (the URL to open); 0 picks a free one.")
    var port: UInt16 = 0

    @Option(help: "Port of the Apple emulator; 0 picks a free one.")
    var emulatorPort: UInt16 = 0

    @Option(help: "Port of the demo upstream app; 0 picks a free one.")
    var upstreamPort: UInt16 = 0

    static let teamID = "DEMOTEAM01"
    static let clientID = "com.example.sidecar-demo"
    static let keyID = "DEMOKEY001"

    func run() throws {
        LoggingSystem.bootstrap { SidecarLogHandler(label: $0, format: .text, level: .info) }
        let logger = Logger(label: "sidecar.demo")
        do {
            try serve(logger: logger)
        } catch let failure as RuntimeFailure {
            throw failure
        } catch {
            throw RuntimeFailure("demo: \(error)")
        }
    }

    private func serve(logger: Logger) throws {
        let files = try DemoDirectory()
        defer { files.remove() }  // normal exit, start-up failure, and after a signal's drain
        let directory = files.path
        let key = try P256PrivateKey.generate()
        let keyFile = try files.write(try key.pkcs8PEM(), to: "AuthKey_\(Self.keyID).p8")
        let cookieSecret = Base64.encode(try SecureRandom.bytes(32))
        try files.write(cookieSecret + "\n", to: "cookie-secret")

        let sidecarPort = port != 0 ? port : try DemoFiles.freePort()
        let publicURL = "http://localhost:\(sidecarPort)"
        let emulatorOptions = EmulatorOptions(
            issuer: "", teamID: Self.teamID,
            clients: [EmulatorClient(id: Self.clientID, redirectURIs: [publicURL + "/.auth/callback"])],
            clientKeys: [Self.keyID: key.publicKey])
        // The emulator's signing keys stay in memory (no keyDirectory): nothing more on disk.
        // Its thread and the demo app's start with the stop signals blocked, so those signals
        // reach this thread (see DemoDirectory).
        let emulator = try DemoDirectory.withStopSignalsBlocked {
            try RunningEmulator.start(
                options: emulatorOptions, listen: try SocketAddress(host: "127.0.0.1", port: emulatorPort))
        }
        defer { emulator.stop() }
        let upstream = try DemoDirectory.withStopSignalsBlocked { try DemoUpstream.start(port: upstreamPort, console: emulator.issuer + "/emulator")
        }
        defer { upstream.stop() }

        let configFile = try files.write("""
            # Written by `sidecar demo`: the same file works with `sidecar run --config`.
            listen: 127.0.0.1:\(sidecarPort)
            public_url: \(publicURL)
            upstream: http://\(upstream.address)
            workers: 1
            apple:
              team_id: \(Self.teamID)
              client_id: \(Self.clientID)
              key_id: \(Self.keyID)
              private_key_file: \(keyFile)
              base_url: \(emulator.issuer)
            session:
              secrets: [file:\(directory)/cookie-secret]
            admin:
              listen: 127.0.0.1:0
            log:
              format: text

            """, to: "sidecar.yaml")
        let config: Config
        // The demo's settings are its own: SIDECAR_* variables meant for a real deployment stay out.
        do { config = try Config.load(file: configFile, environment: [:]) } catch {
            throw RuntimeFailure("demo configuration: \(error)")
        }
        var options = ProxyOptions(config: config)
        options.auth = try AuthSettings(config: config, shared: AuthShared())
        let server = try ProxyServer(options: options, logger: logger)
        writeStandardOutput("""

            Sign in with Apple demo
              open            \(publicURL)/
              Apple emulator  \(emulator.issuer)/emulator   (console: test users, faults, consent, notifications)
              demo app        http://\(upstream.address)/   (behind the sidecar; it trusts its headers)
              admin           \(server.adminAddress.map { "http://\($0)/metrics" } ?? "off")   (also /healthz, /readyz)
              files           \(directory)   (sidecar.yaml, client key, cookie secret)
            Press Ctrl-C to stop.

            """)
        try server.run()
    }
}

/// The demo's ports.
private enum DemoFiles {
    /// A port free right now on 127.0.0.1 (the emulator must know the callback URL first).
    static func freePort() throws -> UInt16 {
        let fd = try Socket.listen(on: try SocketAddress(host: "127.0.0.1", port: 0), reusePort: false)
        defer { Socket.close(fd) }
        guard let address = Socket.localAddress(of: fd), address.port != 0 else {
            throw RuntimeFailure("demo: no free port")
        }
        return address.port
    }
}

/// The demo upstream: one page showing the identity headers it received (escaped) and a
/// sign-out button. On its own thread and loop.
private final class DemoUpstream: @unchecked Sendable {
    let address: SocketAddress
    private let channel: WakeupChannel
    // Built on the caller's thread, then used only by `thread` (until `stop` joins it).
    private var loop: EventLoop?
    private var server: ServiceServer?
    private var wakeup: Wakeup?
    private var thread: WorkerThread?

    private init(address: SocketAddress, channel: WakeupChannel, loop: EventLoop, server: ServiceServer) {
        self.address = address
        self.channel = channel
        self.loop = loop
        self.server = server
    }

    static func start(port: UInt16, console: String) throws -> DemoUpstream {
        let loop = try EventLoop()
        let server = try ServiceServer(loop: loop, address: try SocketAddress(host: "127.0.0.1", port: port)) {
            request, respond in respond(page(request, console: console))
        }
        guard let address = server.localAddress else { throw RuntimeFailure("demo upstream: no address") }
        let upstream = DemoUpstream(address: address, channel: try WakeupChannel(), loop: loop, server: server)
        upstream.wakeup = Wakeup(loop: loop, channel: upstream.channel) { [unowned upstream] in
            upstream.server?.close()
            upstream.loop?.stop()
        }
        upstream.thread = try WorkerThread { upstream.run() }
        return upstream
    }

    private func run() {
        loop?.run()
        wakeup = nil
        server = nil
        loop = nil
    }

    func stop() {
        channel.notify()
        thread?.join()
    }

    /// The identity a page shows: every default identity header but the signed assertion.
    private static let identityHeaders: [String] = {
        let defaults = Config.Headers()
        return [defaults.userID, defaults.email, defaults.emailVerified, defaults.privateEmail, defaults.name]
    }()

    /// The app page in the sidecar's design: who you are, and the whole lifecycle — sign
    /// out, delete the account, and the emulator's console to revoke consent from "Apple".
    static func page(_ request: ServiceRequest, console: String) -> ServiceResponse {
        var rows = ""
        for name in identityHeaders {
            let value = request.header(name)
            rows += "<tr><th scope=\"row\">\(HTML.escape(name))</th><td>\(value.map { "<code>\(HTML.escape($0))</code>" } ?? "<em>absent</em>")</td></tr>\n"
        }
        let decodedName = request.header(Config.Headers().name).flatMap(percentDecoded)
        let name = decodedName ?? "there"
        // Apple sends the name once, at a user's first authorization of the app: a second
        // sign-in without it looks like a bug unless the page says why.
        let nameNote = decodedName != nil ? "" : """
            <p class="notice" id="name-note">No name this time: Apple sends a user's name only at their first
            authorization of an app, never again, so your app must store <code>X-Auth-Name</code> when it first sees
            it. In the emulator's console, revoke this user's consent to be asked (and sent the name) again.</p>

            """
        let body = PageDesign.head(title: "Sidecar demo app") + """
            <main class="wide">
            <p class="notice" id="demo-banner">Demo: "Apple" here is the local emulator. In its
            <a href="\(HTML.escape(console))" id="console-link">console</a> you can add test users, arm faults, revoke a
            user's consent or send Apple's notifications, and watch this session end.</p>
            <h1>Hello, \(HTML.escape(name))</h1>
            \(nameNote)            <p>This page is the upstream app. It never saw Apple: the sidecar signed you in and told it who you are in
            these request headers (any client-sent copy was removed).</p>
            <table>\(rows)</table>
            <p>Path: <code>\(HTML.escape(request.path))</code></p>
            <div class="actions">
            <form method="post" action="/.auth/logout"><button type="submit" id="sign-out">Sign out</button></form>
            <form method="post" action="/.auth/revoke"><button type="submit" class="danger" id="delete-account">Delete my account</button></form>
            </div>
            </main>
            </body></html>

            """
        var response = ServiceResponse.html(200, body)
        response.headers.append(("Content-Security-Policy", demoPolicy))
        response.headers.append(("Referrer-Policy", "no-referrer"))
        return response
    }

    private static let demoPolicy = PageDesign.contentSecurityPolicy(
        styleHashes: [Base64.encode(SHA256.hash(Array(PageDesign.styleSheet.utf8)))])

    /// `%XX` decoded as UTF-8 (the name header); nil if malformed.
    private static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let b = iterator.next() {
            guard b == UInt8(ascii: "%") else {
                bytes.append(b)
                continue
            }
            guard let hi = iterator.next(), let lo = iterator.next(),
                  let value = UInt8(String(decoding: [hi, lo], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Unbuffered write to fd 1 (scripts and people wait for the URL).
private func writeStandardOutput(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
}
