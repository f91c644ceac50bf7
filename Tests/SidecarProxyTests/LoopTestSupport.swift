import CEvent
import Glibc
import SidecarEvent
import XCTest

extension EventLoop {
    /// Runs `body` in one iteration of this loop (a timer callback), then `after` in a later
    /// one, then stops the loop; fails the calling test if the loop has not stopped in 5 s.
    func runTwoIterations(_ body: @escaping () -> Void, after: @escaping () -> Void,
                          file: StaticString = #filePath, line: UInt = #line) {
        var second: SidecarEvent.Timer?
        let first = SidecarEvent.Timer(loop: self) { [unowned self] in
            body()
            second = SidecarEvent.Timer(loop: self) { [unowned self] in
                after()
                self.stop()
            }
            second?.schedule(afterMilliseconds: 20)
        }
        first.schedule(afterMilliseconds: 1)
        let guardTimer = SidecarEvent.Timer(loop: self) { [unowned self] in
            XCTFail("loop did not stop", file: file, line: line)
            self.stop()
        }
        guardTimer.schedule(afterMilliseconds: 5000)
        run()
        withExtendedLifetime((first, guardTimer)) {}
    }
}

/// What a stream told its delegate (the stream's delegate reference is unowned: keep it alive).
final class StreamRecorder: SidecarEvent.StreamDelegate {
    var reads: [(count: Int, error: Int32)] = []
    var drains = 0
    func stream(_ stream: SidecarEvent.Stream, didRead count: Int, error: Int32) { reads.append((count, error)) }
    func streamDidDrain(_ stream: SidecarEvent.Stream) { drains += 1 }
    func stream(_ stream: SidecarEvent.Stream, didConnect error: Int32) {}
}

/// A test over a non-blocking AF_UNIX socketpair: `fds[0]` for the stream under test, `fds[1]`
/// the peer (closed after the test unless a test closed it and set it to -1).
class SocketPairTestCase: XCTestCase {
    var fds: [Int32] = [-1, -1]

    override func setUp() {
        SignalWatcher.ignoreSIGPIPE()
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        for fd in pair { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        fds = pair
    }

    override func tearDown() {
        if fds[1] >= 0 { close(fds[1]) }
    }
}
