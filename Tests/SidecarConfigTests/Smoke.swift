import XCTest
@testable import SidecarConfig

final class SidecarConfigSmokeTests: XCTestCase {
    func testModuleLinks() {}
}
