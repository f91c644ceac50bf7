import XCTest

@testable import SidecarHTTP

final class SmallCopyTests: XCTestCase {
    /// Every length from 0 to 70 at every alignment: the bytes copied are the source's, and
    /// no byte before or after the destination range changes.
    func testEveryLengthAtEveryOffsetCopiesExactlyItsBytes() {
        let source = (0..<128).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for count in 0...70 {
            for offset in 0..<8 {
                var destination = [UInt8](repeating: 0xEE, count: 96)
                source.withUnsafeBytes { from in
                    destination.withUnsafeMutableBytes { to in
                        SmallCopy.copy(to.baseAddress! + offset, from.baseAddress! + offset, count)
                    }
                }
                XCTAssertEqual(Array(destination[offset..<(offset + count)]), Array(source[offset..<(offset + count)]), "\(count) at \(offset)")
                XCTAssertTrue(destination[..<offset].allSatisfy { $0 == 0xEE }, "before \(count) at \(offset)")
                XCTAssertTrue(destination[(offset + count)...].allSatisfy { $0 == 0xEE }, "after \(count) at \(offset)")
            }
        }
    }
}
