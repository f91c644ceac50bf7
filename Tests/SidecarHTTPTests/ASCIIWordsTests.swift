import XCTest
@testable import SidecarHTTP

/// The word-at-a-time case folding against its byte-at-a-time definition.
final class ASCIIWordsTests: XCTestCase {
    private func bytewise(_ w: UInt64, underscore: Bool) -> UInt64 {
        var out: UInt64 = 0
        for i in 0..<8 {
            var b = UInt8(truncatingIfNeeded: w >> (8 * UInt64(i)))
            if b >= 0x41 && b <= 0x5A { b |= 0x20 } else if underscore && b == 0x5F { b = 0x2D }
            out |= UInt64(b) << (8 * UInt64(i))
        }
        return out
    }

    func testEveryByteInEveryPositionAmongRandomNeighbours() {
        var generator = SystemRandomNumberGenerator()
        for position in 0..<8 {
            for b in 0...255 {
                for _ in 0..<8 {
                    var w = generator.next() as UInt64
                    w &= ~(0xFF << (8 * UInt64(position)))
                    w |= UInt64(b) << (8 * UInt64(position))
                    XCTAssertEqual(ASCIIWords.lowercased(w), bytewise(w, underscore: false), String(w, radix: 16))
                    XCTAssertEqual(ASCIIWords.folded(w), bytewise(w, underscore: true), String(w, radix: 16))
                }
            }
        }
    }

    func testComparisonsOfEveryLengthReadOnlyTheirBytes() {
        // Each length from 0 to 20, the name at the very end of its buffer (a read past it
        // would be caught by the sanitizer-free check below: the byte after is different).
        for n in 0...20 {
            let lower = (0..<n).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            var upper = lower.map { $0 - 0x20 }
            lower.withUnsafeBytes { l in
                upper.withUnsafeBytes { u in
                    XCTAssertTrue(ASCIIWords.equal(u.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, folding: n,
                                                   to: l.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, underscore: false), "\(n)")
                }
            }
            for i in 0..<n {
                upper[i] ^= 0x01
                lower.withUnsafeBytes { l in
                    upper.withUnsafeBytes { u in
                        XCTAssertFalse(ASCIIWords.equal(u.baseAddress!, folding: n, to: l.baseAddress!, underscore: true), "\(n) @\(i)")
                    }
                }
                upper[i] ^= 0x01
            }
        }
    }

    func testNameComparisonsOfEveryLengthAndCase() {
        let names = ["te", "host", "cookie", "x-auth-user-id", "content-length", "transfer-encoding",
                     "x-a-really-long-header-name-of-forty-bytes"]
        let set = HeaderNameSet(names)
        for name in names {
            for variant in [name, name.uppercased(), name.replacingOccurrences(of: "-", with: "_")] {
                XCTAssertTrue(set.contains(variant), variant)
                var changed = Array(variant.utf8)
                for i in changed.indices {  // one byte off anywhere: no match
                    let saved = changed[i]
                    changed[i] = saved == 0x7A ? 0x79 : saved == 0x5A ? 0x59 : saved &+ 1
                    XCTAssertFalse(set.contains(String(decoding: changed, as: UTF8.self)), "\(variant) @\(i)")
                    changed[i] = saved
                }
            }
        }
        let head = try! XCTUnwrap(HTTPRequestHead.parse(Array("GET / HTTP/1.1\r\nHOST: h\r\nContent-LENGTH: 0\r\nTransfer-Encodinh: x\r\n\r\n".utf8)))
        XCTAssertTrue(head.fieldName(head.fields[0], is: "host"))
        XCTAssertTrue(head.fieldName(head.fields[1], is: "content-length"))
        XCTAssertFalse(head.fieldName(head.fields[2], is: "transfer-encoding"))
        XCTAssertFalse(head.fieldName(head.fields[0], is: "hos"))
    }
    /// Three names of every length from 1 to 70 in one set (each length a group; the keys
    /// cover names up to 16 bytes, longer ones are compared whole): each matches in any case
    /// and with `_` for `-`; a byte changed anywhere, or a name of another length, does not.
    func testSetsOfSeveralNamesOfEveryLength() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789-".utf8)
        var names: [[UInt8]] = []
        for length in 1...70 {
            for _ in 0..<3 {
                names.append((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
            }
        }
        let set = HeaderNameSet(names.map { String(decoding: $0, as: UTF8.self) })
        func contains(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { set.contains($0) } }
        for name in names {
            XCTAssertTrue(contains(name))
            XCTAssertTrue(contains(Array(String(decoding: name, as: UTF8.self).uppercased().utf8)))
            XCTAssertTrue(contains(name.map { $0 == 0x2D ? 0x5F : $0 }))
            var changed = name
            for i in changed.indices {
                let saved = changed[i]
                changed[i] = saved == 0x7A ? 0x79 : saved == 0x2D ? 0x2E : saved &+ 1
                if !names.contains(changed) { XCTAssertFalse(contains(changed), "\(name) @\(i)") }
                changed[i] = saved
            }
            XCTAssertFalse(contains(name + [0x78]) && !names.contains(name + [0x78]))
        }
        XCTAssertFalse(contains([]))
    }

    func testLowercaseCopyOfEveryLengthAndByte() {
        let source = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        for length in 0..<40 {
            for offset in [0, 1, 3, 200, 260] where offset + length <= source.count {
                let slice = Array(source[offset..<(offset + length)])
                var copied = [UInt8](repeating: 0, count: length)
                slice.withUnsafeBytes { src in copied.withUnsafeMutableBytes { ASCIILowercase.copy(src, to: $0.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!) } }
                XCTAssertEqual(copied, slice.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, "length \(length) at \(offset)")
            }
        }
    }
}
