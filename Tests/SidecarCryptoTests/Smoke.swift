import XCTest
@testable import SidecarCrypto

final class SidecarCryptoSmokeTests: XCTestCase {
    func testModuleLinks() {}
}
