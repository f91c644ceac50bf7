import CEvent
import Glibc
import SidecarEvent
import XCTest

/// An object that owns an event of a loop's base keeps the loop (and its base) alive: freeing
/// the event after `event_base_free` reads freed memory. A worker's teardown releases its
/// parts in declaration order, and the last holder of the loop may go first.
final class EventOwnershipTests: XCTestCase {
    func testEveryEventOwnerKeepsItsLoopUntilItIsGone() throws {
        let channel = try WakeupChannel()
        var owners: [(String, (EventLoop) throws -> AnyObject)] = [
            ("Reaper", { Reaper(loop: $0) }),
            ("Timer", { SidecarEvent.Timer(loop: $0) }),
            ("Wakeup", { Wakeup(loop: $0, channel: channel) {} }),
        ]
        owners.append(("Listener", { loop in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            return Listener(loop: loop, fd: fd) { fd, _ in close(fd) }
        }))
        for (name, make) in owners {
            var loop: EventLoop? = try EventLoop()
            weak let weakLoop = loop
            var owner: AnyObject? = try make(loop!)
            loop = nil
            XCTAssertNotNil(weakLoop, "\(name) keeps its loop")
            owner = nil
            XCTAssertNil(weakLoop, "\(name) lets it go with itself")
            _ = owner
        }
    }
}
