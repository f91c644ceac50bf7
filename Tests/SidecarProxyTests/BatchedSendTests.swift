import CEvent
import Glibc
@testable import SidecarEvent
import XCTest

/// `SendBatch`: the output the streams deferred to the end of an iteration goes out in one
/// io_uring call where the kernel allows it. These drive a real loop over socketpairs: every
/// stream's bytes must arrive whole and in order (more streams than one call takes, more
/// chains than one message offers), a full socket must keep the rest for its write interest,
/// a closed peer must reach its delegate, and nothing may be reported twice or lost.
final class BatchedSendTests: XCTestCase {
    private var pairs: [(ours: Int32, peer: Int32)] = []

    override func setUp() {
        SignalWatcher.ignoreSIGPIPE()
    }

    override func tearDown() {
        for pair in pairs where pair.peer >= 0 { close(pair.peer) }
        pairs = []
    }

    private func makePair() -> (ours: Int32, peer: Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        pairs.append((fds[0], fds[1]))
        return (fds[0], fds[1])
    }

    private func received(on fd: Int32) -> [UInt8] {
        var all: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { return all }
            all += buffer[..<n]
        }
    }

    /// Queues `count` chains of `size` distinct bytes (each its own chain: a reference into
    /// `memory`, which the caller frees after the loop ran) and returns the bytes in order.
    private func queueChains(_ count: Int, size: Int, seed: Int, on stream: SidecarEvent.Stream,
                             memory: UnsafeMutableRawPointer) -> [UInt8] {
        var expected: [UInt8] = []
        for chain in 0..<count {
            for i in 0..<size {
                let byte = UInt8(truncatingIfNeeded: seed &* 131 &+ chain &* 31 &+ i)
                memory.storeBytes(of: byte, toByteOffset: chain * size + i, as: UInt8.self)
                expected.append(byte)
            }
            XCTAssertEqual(evbuffer_add_reference(stream.output.buffer, memory + chain * size, size, nil, nil), 0)
        }
        return expected
    }

    func testEveryStreamOfAnIterationArrivesWholeAndInOrder() throws {
        let loop = try EventLoop()
        let streamCount = SendBatch.capacity + 6, chains = SidecarEvent.Stream.sendChains + 4, size = 101
        let recorder = StreamRecorder()
        var streams: [SidecarEvent.Stream] = [], expected: [[UInt8]] = [], memories: [UnsafeMutableRawPointer] = []
        defer { memories.forEach { $0.deallocate() } }
        for _ in 0..<streamCount {
            let stream = SidecarEvent.Stream(loop: loop, fd: makePair().ours)
            stream.delegate = recorder
            streams.append(stream)
            memories.append(.allocate(byteCount: chains * size, alignment: 8))
        }
        let callsBefore = loop.batchedSendCalls
        loop.runTwoIterations({
            for (index, stream) in streams.enumerated() {
                expected.append(self.queueChains(chains, size: size, seed: index, on: stream, memory: memories[index]))
                stream.flushAtEndOfIteration()
            }
        }, after: {})
        for (index, stream) in streams.enumerated() {
            let bytes = received(on: pairs[index].peer)
            XCTAssertEqual(bytes.count, expected[index].count, "stream \(index)")
            XCTAssertTrue(bytes == expected[index], "stream \(index): bytes out of order or changed")
            XCTAssertEqual(stream.pendingOutput, 0)
            XCTAssertEqual(stream.bytesWritten, UInt64(chains * size))
        }
        XCTAssertTrue(recorder.reads.isEmpty, "\(recorder.reads)")
        XCTAssertEqual(recorder.drains, streamCount, "each stream is reported drained exactly once")
        if loop.usesBatchedSends {
            // 70 streams: one call for the first 64, one for the other 6.
            XCTAssertEqual(loop.batchedSendCalls - callsBefore, 2)
        }
        streams.forEach { $0.close() }
    }

    /// A socket that cannot take its whole output keeps the rest, which its write interest
    /// sends later; the other streams of the batch are not held up.
    func testAFullSocketKeepsTheRestForItsWriteInterest() throws {
        let loop = try EventLoop()
        let small = makePair(), other = makePair()
        var size: Int32 = 4096
        XCTAssertEqual(setsockopt(small.ours, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)), 0)
        let full = SidecarEvent.Stream(loop: loop, fd: small.ours), quick = SidecarEvent.Stream(loop: loop, fd: other.ours)
        let recorder = StreamRecorder()
        full.delegate = recorder
        quick.delegate = recorder
        let bigMemory = UnsafeMutableRawPointer.allocate(byteCount: 300 * 4000, alignment: 8)
        let smallMemory = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        defer { bigMemory.deallocate(); smallMemory.deallocate() }
        var bigExpected: [UInt8] = [], quickExpected: [UInt8] = [], bigReceived: [UInt8] = []
        var pendingAfterBatch = 0, quickAfterBatch: [UInt8] = []
        var reader: SidecarEvent.Timer?
        reader = SidecarEvent.Timer(loop: loop) { [unowned self] in
            bigReceived += self.received(on: small.peer)
            if bigReceived.count >= bigExpected.count && recorder.drains >= 2 { loop.stop() } else { reader?.schedule(afterMilliseconds: 1) }
        }
        let look = SidecarEvent.Timer(loop: loop) { [unowned self] in
            pendingAfterBatch = full.pendingOutput
            quickAfterBatch = self.received(on: other.peer)
            reader?.schedule(afterMilliseconds: 1)
        }
        let start = SidecarEvent.Timer(loop: loop) { [unowned self] in
            bigExpected = self.queueChains(300, size: 4000, seed: 1, on: full, memory: bigMemory)
            quickExpected = self.queueChains(1, size: 64, seed: 2, on: quick, memory: smallMemory)
            full.flushAtEndOfIteration()
            quick.flushAtEndOfIteration()
            // Scheduled from here, the look comes in a later iteration, after the batch went
            // out: two timers scheduled up front could both be due in one iteration of a loop
            // that woke late (a loaded machine), and the look would then come before the batch.
            look.schedule(afterMilliseconds: 20)
        }
        // A guard against a hang only: the writes take milliseconds; 10 s covers any load.
        let guardTimer = SidecarEvent.Timer(loop: loop) {
            XCTFail("the output was not written within 10 s")
            loop.stop()
        }
        start.schedule(afterMilliseconds: 1)
        guardTimer.schedule(afterMilliseconds: 10_000)
        loop.run()
        withExtendedLifetime((start, look, guardTimer)) {}
        XCTAssertGreaterThan(pendingAfterBatch, 0, "a 4 KiB socket cannot have taken 1.2 MB at once")
        XCTAssertTrue(quickAfterBatch == quickExpected, "the other stream of the batch was held up")
        XCTAssertEqual(bigReceived.count, bigExpected.count)
        XCTAssertTrue(bigReceived == bigExpected, "bytes arrived out of order or changed")
        XCTAssertEqual(full.bytesWritten, UInt64(bigExpected.count))
        XCTAssertTrue(recorder.reads.isEmpty, "\(recorder.reads)")
        XCTAssertEqual(recorder.drains, 2)
        full.close()
        quick.close()
    }

    /// One peer of the batch is gone: its stream hears of the failed write as a failed read;
    /// the others are written and drained.
    func testAClosedPeerFailsOnlyItsOwnStream() throws {
        let loop = try EventLoop()
        let recorders = [StreamRecorder(), StreamRecorder(), StreamRecorder()]
        var streams: [SidecarEvent.Stream] = []
        for recorder in recorders {
            let stream = SidecarEvent.Stream(loop: loop, fd: makePair().ours)
            stream.delegate = recorder
            stream.pauseReading()  // only the write may report the closed peer
            streams.append(stream)
        }
        close(pairs[1].peer)
        pairs[1].peer = -1
        loop.runTwoIterations({
            for stream in streams {
                let bytes = Array("GET / HTTP/1.1\r\n\r\n".utf8)
                XCTAssertTrue(stream.output.append(bytes))
                stream.flushAtEndOfIteration()
            }
        }, after: {})
        XCTAssertEqual(String(decoding: received(on: pairs[0].peer), as: UTF8.self), "GET / HTTP/1.1\r\n\r\n")
        XCTAssertEqual(String(decoding: received(on: pairs[2].peer), as: UTF8.self), "GET / HTTP/1.1\r\n\r\n")
        XCTAssertEqual(recorders[0].drains, 1)
        XCTAssertEqual(recorders[2].drains, 1)
        XCTAssertTrue(recorders[0].reads.isEmpty && recorders[2].reads.isEmpty)
        XCTAssertEqual(recorders[1].reads.count, 1)
        XCTAssertEqual(recorders[1].reads.first?.count, 0)
        XCTAssertTrue([EPIPE, ECONNRESET].contains(recorders[1].reads.first?.error ?? 0), "\(recorders[1].reads)")
        XCTAssertEqual(recorders[1].drains, 0)
        streams.forEach { $0.close() }
    }

    /// A send whose fate the ring lost (`-EIO`) must not be retried by a plain send (the
    /// bytes may be on the wire already): the stream fails, and nothing reaches the peer twice.
    func testASendOfUnknownFateFailsTheStream() throws {
        let loop = try EventLoop()
        let pair = makePair()
        let stream = SidecarEvent.Stream(loop: loop, fd: pair.ours), recorder = StreamRecorder()
        stream.delegate = recorder
        loop.runTwoIterations({
            let bytes = Array("abc".utf8)
            XCTAssertTrue(stream.output.append(bytes))
            stream.flushAtEndOfIteration()
            stream.finishBatchedSend(-Int(EIO))
        }, after: {})
        XCTAssertEqual(received(on: pair.peer), [])
        XCTAssertEqual(recorder.reads.count, 1)
        XCTAssertEqual(recorder.reads.first?.error, EIO)
        XCTAssertEqual(recorder.drains, 0)
        stream.close()
    }
}
