import CEvent
import Foundation
import Glibc
import SidecarConfig
import SidecarCrypto
import SidecarEvent
import Synchronization
import XCTest

@testable import SidecarProxy

/// The connections of a worker, in process and without one: a `ConnectionContext` on a loop of
/// its own, client connections on one end of a socketpair (the test writes and reads the other
/// end as the client), and an upstream the test plays itself on a unix socket it listens on.
/// Sign-in is configured (the Apple side never called) and every path is public. The loop
/// runs only inside `run(until:)`, so a test steps the connection, looks at what
/// each side got, and answers — swift-nio's EmbeddedChannel, over real descriptors.
final class ConnectionHarness: ConnectionRegistry {
    let loop: EventLoop
    private(set) var context: ConnectionContext!
    let upstreamPath: String
    private let upstreamListener: Int32
    /// Where the connections' log lines go (access lines included), read by `logLines()`.
    let logPath: String
    private let logFD: Int32
    /// Connections that told their registry they closed, and the HTTP/2 connections that took
    /// a socket over from an HTTP/1.1 one.
    private(set) var closed = 0
    private(set) var http2: [HTTP2Connection] = []
    /// Holds connections as the worker's table does (they hold themselves only while called).
    private var table: [ObjectIdentifier: AnyObject] = [:]
    private static let serial = Atomic<Int>(0)

    /// `yaml`: more of `sidecar.yaml` after `listen` and `upstream`.
    init(yaml: String = "") throws {
        SignalWatcher.ignoreSIGPIPE()
        loop = try EventLoop()
        let serial = Self.serial.wrappingAdd(1, ordering: .relaxed).newValue
        upstreamPath = "/tmp/sidecar-harness-\(getpid())-\(serial).sock"
        unlink(upstreamPath)
        upstreamListener = try Self.listen(unixPath: upstreamPath)
        logPath = "/tmp/sidecar-harness-\(getpid())-\(serial).log"
        logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        let config = try Config.parse(
            yaml: """
                listen: 127.0.0.1:0
                public_url: https://app.example
                upstream: unix:\(upstreamPath)
                apple: {team_id: ABCDE12345, client_id: com.example.web, key_id: XYZ123ABCD, private_key: env:APPLE_KEY, base_url: "http://127.0.0.1:9"}
                session: {secrets: [env:SECRET]}
                access: {public_paths: ["/**"]}

                """ + yaml,
            environment: ["APPLE_KEY": try P256PrivateKey.generate().pkcs8PEM(), "SECRET": Base64.encode([UInt8](repeating: 0x21, count: 32))])
        var options = ProxyOptions(config: config)
        options.auth = try AuthSettings(config: config, shared: AuthShared())
        let metrics = MetricsRecorder(loop: loop, board: MetricsBoard(workers: 1), readiness: Readiness(workers: 1), worker: 0)
        context = try ConnectionContext(
            loop: loop, options: options, upstreamAddresses: [[SocketAddress(unixPath: upstreamPath)]],
            metrics: metrics, readiness: Readiness(workers: 1), spans: SpanQueue(capacity: 16), logSink: LogSink(fd: logFD),
            registry: self, upstreamLimit: 64)
    }

    deinit {
        close(upstreamListener)
        close(logFD)
        unlink(logPath)
        unlink(upstreamPath)
    }

    /// A client connection on a socketpair; returns the client's end (non-blocking).
    func connect() -> (client: Int32, connection: ClientConnection) {
        var pair: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        for fd in pair { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        let peer = try! SocketAddress(host: "192.0.2.7", port: 40_000)
        let connection = ClientConnection(context: context, fd: pair[0], peer: peer)
        table[ObjectIdentifier(connection)] = connection
        return (pair[1], connection)
    }

    /// Runs the loop until `done()` holds (looked at every millisecond); fails the test if it
    /// does not within `ms`.
    func run(until done: @escaping () -> Bool, ms: Int64 = 3_000, file: StaticString = #filePath, line: UInt = #line) {
        var waited: Int64 = 0
        var poll: SidecarEvent.Timer?
        poll = SidecarEvent.Timer(loop: loop) { [unowned self] in
            waited += 1
            if done() {
                self.loop.stop()
            } else if waited > ms {
                XCTFail("condition not met within \(ms) ms", file: file, line: line)
                self.loop.stop()
            } else {
                poll?.schedule(afterMilliseconds: 1)
            }
        }
        poll?.schedule(afterMilliseconds: 0)
        loop.run()
        poll = nil
    }

    /// An upstream connection the sidecar opened, once it has (non-blocking accept).
    func acceptUpstream() -> Int32? {
        let fd = accept(upstreamListener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// The lines written to the log so far.
    func logLines() -> [String] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    // MARK: ConnectionRegistry

    func connectionClosed(_ client: any FrontConnection) {
        if table.removeValue(forKey: ObjectIdentifier(client)) != nil { closed += 1 }
    }

    func handOver(from client: ClientConnection, to successor: HTTP2Connection) {
        table.removeValue(forKey: ObjectIdentifier(client))
        table[ObjectIdentifier(successor)] = successor
        http2.append(successor)
    }

    // MARK: bytes on the test's ends

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        precondition(written == bytes.count, "a test write fits the socket buffer")
    }

    static func send(_ fd: Int32, _ text: String) { send(fd, Array(text.utf8)) }

    /// What has arrived on `fd` and was not read yet; `ended` is set once the peer closed.
    final class Inbox {
        let fd: Int32
        private(set) var bytes: [UInt8] = []
        private(set) var ended = false
        init(_ fd: Int32) { self.fd = fd }

        @discardableResult func read() -> Inbox {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while !ended {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n > 0 { bytes += buffer[0..<n] } else if n == 0 || errno != EAGAIN { ended = true } else { break }
            }
            return self
        }

        var text: String { String(decoding: bytes, as: UTF8.self) }
        func contains(_ needle: String) -> Bool { read().text.contains(needle) }
        func clear() { bytes.removeAll() }
    }

    private static func listen(unixPath path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, c) in path.utf8.enumerated() { raw[i] = c }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else { throw EventError.address("unix:" + path) }
        return fd
    }
}
