import XCTest
@testable import SidecarHTTP

final class SidecarHTTPSmokeTests: XCTestCase {
    func testModuleLinks() {}
}
