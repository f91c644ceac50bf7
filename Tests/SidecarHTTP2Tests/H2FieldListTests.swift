import XCTest

@testable import SidecarHTTP2

final class H2FieldListTests: XCTestCase {
    func testTheListGrowsPastItsFirstBuffers() {
        let fields = H2FieldList()
        let value = [UInt8](repeating: UInt8(ascii: "v"), count: 700)
        fields.appendStatus(404)
        for i in 0..<40 {
            Array("X-Field-\(i)".utf8).withUnsafeBytes { name in value.withUnsafeBytes { fields.append(lowercasing: name, value: $0) } }
        }
        XCTAssertEqual(fields.count, 41)
        XCTAssertEqual(String(decoding: fields.field(0).value, as: UTF8.self), "404")
        XCTAssertEqual(String(decoding: fields.field(40).name, as: UTF8.self), "x-field-39")
        XCTAssertEqual(fields.field(40).value, value)
        fields.removeAll()
        XCTAssertEqual(fields.count, 0)
    }
}
