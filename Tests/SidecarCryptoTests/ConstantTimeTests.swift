import XCTest
@testable import SidecarCrypto

final class ConstantTimeTests: XCTestCase {
    func testRawComparisonFindsADifferenceAtEveryPositionAndLength() {
        for length in 0..<80 {
            let a = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            a.withUnsafeBytes { x in
                Array(a).withUnsafeBytes { y in XCTAssertTrue(ConstantTime.equals(x, y)) }
            }
            for position in 0..<length {
                var b = a
                b[position] ^= 0x80
                a.withUnsafeBytes { x in
                    b.withUnsafeBytes { y in XCTAssertFalse(ConstantTime.equals(x, y), "\(length) \(position)") }
                }
            }
            let longer = a + [0]
            a.withUnsafeBytes { x in longer.withUnsafeBytes { y in XCTAssertFalse(ConstantTime.equals(x, y)) } }
        }
    }
}
