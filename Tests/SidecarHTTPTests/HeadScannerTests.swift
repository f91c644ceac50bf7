import XCTest

@testable import SidecarHTTP

/// The head's end found sixteen bytes a step against a byte-at-a-time reference: random bytes
/// from an alphabet thick with CR and LF, at every length across several blocks, from every
/// start, so line ends fall at each position of a block and across block edges.
final class HeadScannerTests: XCTestCase {
    private enum Outcome: Equatable { case end(Int), incomplete, bareLF }

    private func reference(_ bytes: [UInt8], start: Int, limit: Int) -> Outcome {
        for i in start..<limit where bytes[i] == 0x0A {
            guard i > start, bytes[i - 1] == 0x0D else { return .bareLF }
            if i - 2 >= start, bytes[i - 2] == 0x0A { return .end(i + 1) }
        }
        return .incomplete
    }

    private func scanned(_ bytes: [UInt8], maxBytes: Int) -> Outcome {
        bytes.withUnsafeBytes { raw -> Outcome in
            do throws(HTTPHeadError) {
                guard let bounds = try HeadScanner.find(in: raw, maxBytes: maxBytes, skipLeadingEmptyLines: false) else {
                    return .incomplete
                }
                return .end(bounds.end)
            } catch {
                XCTAssertEqual(error, .bareLF)
                return .bareLF
            }
        }
    }

    func testTheEndAndBareLineFeedsAgreeWithAByteAtATimeScan() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x61, 0x3A, 0x20, 0x0D]
        for length in 1...70 {
            for _ in 0..<300 {
                var bytes = (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }
                // Mostly well-formed lines, so that ends past the first block are reached too.
                if Bool.random(using: &generator) {
                    bytes = Array(repeating: 0, count: length).enumerated().map { i, _ in
                        i % 7 == 5 ? 0x0D : i % 7 == 6 ? 0x0A : 0x61
                    }
                    let at = Int.random(in: 0..<length, using: &generator)
                    bytes[at] = alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
                    if length > 4, Bool.random(using: &generator) {
                        let end = Int.random(in: 3..<length, using: &generator)
                        bytes[end - 3] = 0x0D; bytes[end - 2] = 0x0A; bytes[end - 1] = 0x0D; bytes[end] = 0x0A
                    }
                }
                let maxBytes = length + 1  // never "too large": only the scan is compared
                XCTAssertEqual(scanned(bytes, maxBytes: maxBytes), reference(bytes, start: 0, limit: length),
                               "\(bytes)")
            }
        }
    }

    func testOnlyBytesBelowTheLimitAreLookedAt() {
        let head = crlf("GET / HTTP/1.1\nHost: h\n\n")
        XCTAssertEqual(scanned(head, maxBytes: 200), .end(head.count))
        // The same head with the limit before its end: too large, whatever lies beyond.
        XCTAssertThrowsError(try head.withUnsafeBytes { try HeadScanner.find(in: $0, maxBytes: head.count - 1, skipLeadingEmptyLines: false) })
    }
}
