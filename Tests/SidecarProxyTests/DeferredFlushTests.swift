import CEvent
import Glibc
import SidecarEvent
import XCTest

/// `Stream.flushAtEndOfIteration`: the proxy writes a complete request to its upstream once
/// the loop iteration that produced it has run all its callbacks. These drive a real loop over
/// a socketpair: the output must not reach the socket before the iteration ends, must reach it
/// once after and be reported as drained (a closing client connection linger-closes on it),
/// and a write that fails must reach the delegate (the proxy's retry/502 path).
final class DeferredFlushTests: SocketPairTestCase {
    /// What the peer end holds right now, without waiting.
    private func peerBytes() -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fds[1], &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return n > 0 ? Array(buffer[..<n]) : []
    }

    private func queue(_ text: String, on stream: SidecarEvent.Stream) {
        let bytes = Array(text.utf8)
        XCTAssertTrue(stream.output.append(bytes))
    }

    /// A stream on our end of the pair, reporting to a recorder (kept alive by the caller: the
    /// delegate reference is unowned).
    private func openStream(on loop: EventLoop) -> (SidecarEvent.Stream, StreamRecorder) {
        let stream = SidecarEvent.Stream(loop: loop, fd: fds[0]), recorder = StreamRecorder()
        stream.delegate = recorder
        return (stream, recorder)
    }

    func testDeferredOutputIsWrittenOnceAfterTheIteration() throws {
        let loop = try EventLoop()
        let (stream, recorder) = openStream(on: loop)
        var seenDuringIteration: [UInt8] = [0xFF]
        loop.runTwoIterations({
            self.queue("GET / HTTP/1.1\r\n\r\n", on: stream)
            stream.flushAtEndOfIteration()
            self.queue("GET /2 HTTP/1.1\r\n\r\n", on: stream)
            stream.flushAtEndOfIteration()  // a second request in the same iteration: one write
            seenDuringIteration = self.peerBytes()
        }, after: {
            XCTAssertEqual(String(decoding: self.peerBytes(), as: UTF8.self),
                           "GET / HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n")
        })
        XCTAssertEqual(seenDuringIteration, [], "deferred output reached the socket before the iteration ended")
        XCTAssertEqual(stream.pendingOutput, 0)
        XCTAssertEqual(stream.bytesWritten, 37)
        XCTAssertTrue(recorder.reads.isEmpty)
        XCTAssertEqual(recorder.drains, 1, "a completed deferred write is reported like a drained blocked one")
        stream.close()
    }

    func testDeferredWritesOfSeveralStreamsAllHappen() throws {
        let loop = try EventLoop()
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        defer { close(pair[1]) }
        let first = SidecarEvent.Stream(loop: loop, fd: fds[0]), second = SidecarEvent.Stream(loop: loop, fd: pair[0])
        let recorder = StreamRecorder()
        first.delegate = recorder
        second.delegate = recorder
        var received = ""
        loop.runTwoIterations({
            self.queue("one", on: first)
            first.flushAtEndOfIteration()
            self.queue("two", on: second)
            second.flushAtEndOfIteration()
        }, after: {
            var buffer = [UInt8](repeating: 0, count: 16)
            let n = recv(pair[1], &buffer, buffer.count, Int32(MSG_DONTWAIT))
            received = String(decoding: self.peerBytes(), as: UTF8.self) + (n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : "")
        })
        XCTAssertEqual(received, "onetwo")
        XCTAssertTrue(recorder.reads.isEmpty)
        first.close()
        second.close()
    }

    /// The peer is gone: the deferred write fails after the caller has moved on, so the
    /// failure must come back as a failed read (the proxy then retries or answers 502).
    func testAFailedDeferredWriteReachesTheDelegate() throws {
        let loop = try EventLoop()
        let (stream, recorder) = openStream(on: loop)
        stream.pauseReading()  // only the write may report the closed peer
        close(fds[1])
        fds[1] = -1
        loop.runTwoIterations({
            self.queue("GET / HTTP/1.1\r\n\r\n", on: stream)
            stream.flushAtEndOfIteration()
            XCTAssertTrue(recorder.reads.isEmpty, "reported before the write was attempted")
        }, after: {})
        XCTAssertEqual(recorder.reads.count, 1)
        XCTAssertEqual(recorder.reads.first?.count, 0)
        XCTAssertTrue([EPIPE, ECONNRESET].contains(recorder.reads.first?.error ?? 0), "\(recorder.reads)")
        XCTAssertEqual(recorder.drains, 0)
        stream.close()
    }

    /// Closed within the iteration that deferred its output (the client went away): nothing is
    /// written and nothing is reported.
    func testAStreamClosedBeforeTheEndOfTheIterationWritesNothing() throws {
        let loop = try EventLoop()
        let (stream, recorder) = openStream(on: loop)
        loop.runTwoIterations({
            self.queue("GET / HTTP/1.1\r\n\r\n", on: stream)
            stream.flushAtEndOfIteration()
            stream.close()
        }, after: {
            XCTAssertEqual(self.peerBytes(), [])
        })
        XCTAssertTrue(recorder.reads.isEmpty)
        XCTAssertEqual(recorder.drains, 0)
        XCTAssertEqual(stream.bytesWritten, 0)
    }
}
