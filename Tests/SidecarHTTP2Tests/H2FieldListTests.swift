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

/// Heads handed to libnghttp2 by reference: a pinned head's bytes stay where its pointers say,
/// with their content, while later heads are written (and the buffer outgrown) until the
/// heads are unpinned.
final class H2FieldListPinningTests: XCTestCase {
    private func add(_ fields: H2FieldList, _ name: String, _ value: [UInt8]) {
        Array(name.utf8).withUnsafeBytes { name in value.withUnsafeBytes { fields.append(lowercasing: name, value: $0) } }
    }

    /// The name-value pairs as libnghttp2 would keep them: pointers and lengths.
    private func references(_ fields: H2FieldList) -> [(UnsafePointer<UInt8>, Int, UnsafePointer<UInt8>, Int)] {
        fields.withNameValues(byReference: true) { list in list.map { (UnsafePointer($0.name), $0.namelen, UnsafePointer($0.value), $0.valuelen) } }
    }

    private func read(_ pointer: UnsafePointer<UInt8>, _ count: Int) -> [UInt8] {
        Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    func testAPinnedHeadKeepsItsBytesWhileLaterHeadsOutgrowTheBuffer() {
        let fields = H2FieldList()
        fields.appendStatus(200)
        add(fields, "X-First", Array("first-value".utf8))
        let first = references(fields)
        XCTAssertTrue(first.allSatisfy { $0.1 > 0 && $0.3 > 0 })
        fields.pinHead()
        for round in 0..<3 {
            fields.removeAll()
            fields.appendStatus(404)
            let value = [UInt8](repeating: UInt8(ascii: "a") + UInt8(round), count: 900)
            for i in 0..<30 { add(fields, "X-Later-\(i)", value) }
            XCTAssertEqual(fields.field(30).value, value)
            XCTAssertEqual(String(decoding: fields.field(30).name, as: UTF8.self), "x-later-29")
            fields.pinHead()
            XCTAssertEqual(read(first[0].0, first[0].1), Array(":status".utf8))
            XCTAssertEqual(read(first[0].2, first[0].3), Array("200".utf8))
            XCTAssertEqual(read(first[1].0, first[1].1), Array("x-first".utf8))
            XCTAssertEqual(read(first[1].2, first[1].3), Array("first-value".utf8))
        }
        fields.unpinHeads()
        fields.removeAll()
        add(fields, "X-After", Array("after".utf8))
        XCTAssertEqual(fields.count, 1)
        XCTAssertEqual(String(decoding: fields.field(0).name, as: UTF8.self), "x-after")
    }

    func testAHeadOutgrowingTheBufferMovesWhole() {
        let fields = H2FieldList()
        add(fields, "X-Pinned", Array("p".utf8))
        fields.pinHead()
        fields.removeAll()
        let value = [UInt8](repeating: UInt8(ascii: "z"), count: 300)
        for i in 0..<12 { add(fields, "X-Grow-\(i)", value) }
        XCTAssertEqual(fields.count, 12)
        for i in 0..<12 {
            XCTAssertEqual(String(decoding: fields.field(i).name, as: UTF8.self), "x-grow-\(i)")
            XCTAssertEqual(fields.field(i).value, value)
        }
    }
}
