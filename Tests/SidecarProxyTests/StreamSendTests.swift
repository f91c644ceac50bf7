import CEvent
import Glibc
@testable import SidecarEvent
import XCTest

/// `Stream.flush` writes with `send`/`sendmsg` at most `Stream.sendChains` chains at a time and
/// drains what the kernel took. These drive it over a real socketpair: output of more chains
/// than one call offers must arrive whole and in order, and output larger than the socket
/// buffer must wait for the write interest and end reported as drained, byte for byte.
final class StreamSendTests: SocketPairTestCase {
    /// Everything the peer end holds right now.
    private func drainPeer(into received: inout [UInt8]) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fds[1], &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return }
            received += buffer[..<n]
        }
    }

    /// `count` pieces of distinct bytes, each queued as a chain of its own (a reference).
    private func queuePieces(_ count: Int, size: Int, on stream: SidecarEvent.Stream) -> (UnsafeMutableRawPointer, [UInt8]) {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: count * size, alignment: 8)
        var expected: [UInt8] = []
        for piece in 0..<count {
            for i in 0..<size {
                let byte = UInt8(truncatingIfNeeded: piece &* 31 &+ i)
                memory.storeBytes(of: byte, toByteOffset: piece * size + i, as: UInt8.self)
                expected.append(byte)
            }
            XCTAssertEqual(evbuffer_add_reference(stream.output.buffer, memory + piece * size, size, nil, nil), 0)
        }
        return (memory, expected)
    }

    func testMoreChainsThanOneSendOffersArriveWholeAndInOrder() throws {
        let loop = try EventLoop()
        let stream = SidecarEvent.Stream(loop: loop, fd: fds[0]), recorder = StreamRecorder()
        stream.delegate = recorder
        let pieces = SidecarEvent.Stream.sendChains * 2 + 5
        let (memory, expected) = queuePieces(pieces, size: 97, on: stream)
        defer { memory.deallocate() }

        XCTAssertEqual(stream.flush(), 0)
        var received: [UInt8] = []
        drainPeer(into: &received)
        XCTAssertEqual(received.count, expected.count)
        XCTAssertTrue(received == expected, "bytes arrived out of order or changed")
        XCTAssertEqual(stream.pendingOutput, 0)
        XCTAssertEqual(stream.bytesWritten, UInt64(expected.count))
        XCTAssertTrue(recorder.reads.isEmpty)
        stream.close()
    }

    func testOutputLargerThanTheSocketWaitsForTheWriteInterestAndEndsDrained() throws {
        var small: Int32 = 4096
        XCTAssertEqual(setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size)), 0)
        let loop = try EventLoop()
        let stream = SidecarEvent.Stream(loop: loop, fd: fds[0]), recorder = StreamRecorder()
        stream.delegate = recorder
        let (memory, expected) = queuePieces(300, size: 4000, on: stream)  // 1.2 MB in 300 chains
        defer { memory.deallocate() }

        XCTAssertEqual(stream.flush(), 0)
        XCTAssertGreaterThan(stream.pendingOutput, 0, "the kernel cannot have taken 1.2 MB at once")
        XCTAssertEqual(recorder.drains, 0)

        // The peer reads every millisecond; the stream writes on its write interest meanwhile.
        var received: [UInt8] = []
        var reader: SidecarEvent.Timer?
        reader = SidecarEvent.Timer(loop: loop) { [unowned self] in
            self.drainPeer(into: &received)
            if received.count >= expected.count && recorder.drains > 0 { loop.stop() } else { reader?.schedule(afterMilliseconds: 1) }
        }
        reader?.schedule(afterMilliseconds: 1)
        let guardTimer = SidecarEvent.Timer(loop: loop) {
            XCTFail("the output was not written within 10 s")
            loop.stop()
        }
        guardTimer.schedule(afterMilliseconds: 10_000)
        loop.run()

        XCTAssertEqual(received.count, expected.count)
        XCTAssertTrue(received == expected, "bytes arrived out of order or changed")
        XCTAssertEqual(stream.pendingOutput, 0)
        XCTAssertEqual(stream.bytesWritten, UInt64(expected.count))
        XCTAssertEqual(recorder.drains, 1)
        XCTAssertTrue(recorder.reads.isEmpty)
        withExtendedLifetime((reader, guardTimer)) {}
        stream.close()
    }

    func testAWriteToAClosedPeerIsAnError() throws {
        let loop = try EventLoop()
        let stream = SidecarEvent.Stream(loop: loop, fd: fds[0])
        close(fds[1])
        fds[1] = -1
        let bytes = Array("lost".utf8)
        XCTAssertTrue(stream.output.append(bytes))
        XCTAssertEqual(stream.flush(), EPIPE, "no SIGPIPE, and the error reaches the caller")
        stream.close()
    }
}
