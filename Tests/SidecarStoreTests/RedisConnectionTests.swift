import Foundation
import Glibc
import SidecarEvent
import SidecarRESP
import XCTest

@testable import SidecarStore

/// A command sent while the connection is being made waits for it (within the set-up's
/// deadline) instead of failing at once; the connection's peer is a scripted fake Redis.
final class RedisConnectionTests: XCTestCase {
    func testACommandSentWhileConnectingIsAnsweredOnceTheConnectionIsReady() throws {
        let server = try ScriptedRedis(handshakeDelayMs: 300, answer: "$5\r\nhello\r\n")
        var answer: RESPValue?? = .none
        var stateWhenSent: RedisConnection.State?
        try onALoop { loop, done in
            let connection = RedisConnection(
                loop: loop, handshake: .init(), tls: nil, role: .commands, peer: { server.peer })
            connection.start()
            stateWhenSent = connection.state
            connection.send(RESP.command("GET", "key")) { reply in
                answer = .some(reply)
                connection.stop()
                done()
            }
        }
        XCTAssertEqual(stateWhenSent, .connecting)
        XCTAssertEqual(answer, .some(.bulk(Array("hello".utf8))), "the command failed instead of waiting")
        XCTAssertEqual(server.commandsAfterHandshake, ["GET"])
    }

    func testACommandWaitingForAConnectionFailsWhenTheSetUpTimesOut() throws {
        let server = try ScriptedRedis(handshakeDelayMs: nil, answer: "+OK\r\n")  // never answers PING
        var answer: RESPValue?? = .none
        var waitedMs: Int64 = -1
        try onALoop { loop, done in
            let connection = RedisConnection(
                loop: loop, handshake: .init(), tls: nil, role: .commands, peer: { server.peer })
            connection.commandTimeoutMs = 300
            connection.start()
            let sent = loop.nowMilliseconds
            connection.send(RESP.command("GET", "key")) { reply in
                answer = .some(reply)
                waitedMs = loop.nowMilliseconds - sent
                connection.stop()
                done()
            }
        }
        XCTAssertEqual(answer, .some(nil))
        // The set-up's deadline, looked at every 250 ms.
        XCTAssert(waitedMs >= 250 && waitedMs < 3_000, "waited \(waitedMs) ms")
    }

    func testWhileBackingOffACommandFailsAtOnce() throws {
        let closedPort = try ScriptedRedis.unusedPort()
        var answer: RESPValue?? = .none
        var state: RedisConnection.State?
        try onALoop { loop, done in
            let connection = RedisConnection(
                loop: loop, handshake: .init(), tls: nil, role: .commands,
                peer: { RedisPeer.resolve(host: "127.0.0.1", port: closedPort) })
            connection.onStateChange = { new in
                guard case .down = new, state == nil else { return }
                state = new
                connection.send(RESP.command("GET", "key")) { reply in
                    answer = .some(reply)
                    connection.stop()
                    done()
                }
            }
            connection.start()
        }
        XCTAssertNotNil(state)
        XCTAssertEqual(answer, .some(nil))
    }

    private func onALoop(_ body: @escaping (EventLoop, _ done: @escaping () -> Void) -> Void) throws {
        let loop = try EventLoop()
        let start = Timer(loop: loop) { body(loop) { loop.stop() } }
        let backstop = Timer(loop: loop) { loop.stop() }
        start.schedule(afterMilliseconds: 0)
        backstop.schedule(afterMilliseconds: 10_000)
        loop.run()
        backstop.cancel()
    }
}

/// A Redis that accepts one connection on 127.0.0.1, answers the handshake's PING after
/// `handshakeDelayMs` (nil: never), then answers every command with `answer`.
private final class ScriptedRedis: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var commands: [String] = []

    var peer: RedisPeer? { RedisPeer.resolve(host: "127.0.0.1", port: port) }
    var commandsAfterHandshake: [String] { lock.withLock { commands } }

    init(handshakeDelayMs: Int?, answer: String) throws {
        (listener, port) = try Self.listen()
        let listener = self.listener
        Thread.detachNewThread { [self] in
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var received: [UInt8] = []
            var answeredHandshake = false
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(client, &buffer, buffer.count)
                if count <= 0 { return }
                received += buffer[0..<count]
                if !answeredHandshake {
                    guard let end = Self.commandEnd(received) else { continue }
                    received.removeFirst(end)
                    guard let delay = handshakeDelayMs else { continue }
                    usleep(useconds_t(delay * 1000))
                    _ = write(client, "+PONG\r\n", 7)
                    answeredHandshake = true
                }
                while let end = Self.commandEnd(received) {
                    let name = Self.commandName(received)
                    received.removeFirst(end)
                    lock.withLock { commands.append(name) }
                    _ = answer.withCString { write(client, $0, strlen($0)) }
                }
            }
        }
    }

    deinit { close(listener) }

    /// Where a whole command (an array of bulk strings) ends in `bytes`, if it is all there.
    private static func commandEnd(_ bytes: [UInt8]) -> Int? {
        let parser = RESPParser()
        guard case .value(_, let consumed) = bytes.withUnsafeBytes({ parser.parse($0) }) else { return nil }
        return consumed
    }

    private static func commandName(_ bytes: [UInt8]) -> String {
        let parser = RESPParser()
        guard case .value(.array(let parts?), _) = bytes.withUnsafeBytes({ parser.parse($0) }),
              let name = parts.first?.bytes else { return "?" }
        return String(decoding: name, as: UTF8.self)
    }

    private static func listen() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 1) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// A port nothing listens on: bound, then closed.
    static func unusedPort() throws -> UInt16 {
        let (fd, port) = try listen()
        close(fd)
        return port
    }
}
