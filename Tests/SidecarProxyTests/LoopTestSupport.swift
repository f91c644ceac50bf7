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
