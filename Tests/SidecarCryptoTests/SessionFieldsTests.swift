import XCTest
@testable import SidecarCrypto

/// `SessionFields` reads a payload in place for the request path; it must accept and refuse
/// exactly what `Session(from:)` does, and `Session(fields)` must give back the session.
final class SessionFieldsTests: XCTestCase {
    private func session(name: String? = "Zoë Ruiz-Ñúñez", refresh: String? = "r.token") -> Session {
        Session(id: Array(0..<16), subject: "001667.7f1e9b1f0d41426d8d8616e7d06be6f1.0433",
                email: "ep9ks2tnph@privaterelay.appleid.com", emailVerified: true, privateEmail: false,
                name: name, issuedAt: 1_000, expiresAt: 9_000, idleDeadline: 5_000, lastRevalidation: 1_500,
                appleRefreshToken: refresh, appleClientID: "com.example.app", issuedAtMillis: 42)
    }

    private func fields<R>(_ payload: [UInt8], _ body: (SessionFields) throws -> R) throws -> R {
        try payload.withUnsafeBufferPointer { try body(try SessionFields(parsing: $0)) }
    }

    func testFieldsReadInPlaceGiveBackTheSession() throws {
        for original in [session(), session(name: nil, refresh: nil), session(name: "")] {
            try fields(original.encoded) { fields in
                XCTAssertEqual(Session(fields), original)
                XCTAssertEqual(String(decoding: fields[fields.subject], as: UTF8.self), original.subject)
                XCTAssertEqual(Array(fields[fields.id]), original.id)
                XCTAssertEqual(fields.issuedAtMs, 1_000_042)
                XCTAssertEqual(fields.appleRefreshToken != nil, original.appleRefreshToken != nil)
                XCTAssertThrowsError(try fields.validate(now: 5_000))
                XCTAssertNoThrow(try fields.validate(now: 4_999))
            }
        }
    }

    func testRefusesWhatTheSessionDecoderRefuses() throws {
        let valid = session().encoded
        var candidates: [[UInt8]] = []
        for cut in 0..<valid.count { candidates.append(Array(valid[0..<cut])) }  // every truncation
        candidates.append(valid + [0])  // trailing byte
        var badFlags = valid
        badFlags[17] |= 0x80
        candidates.append(badFlags)
        // Invalid UTF-8 in the (non-ASCII) name and in the (ASCII) subject, at every position.
        let nameStart = valid.firstIndex(of: UInt8(ascii: "Z"))!
        for offset in 0..<8 {
            var broken = valid
            broken[nameStart + offset] = 0xC3 ^ (offset == 2 ? 0x40 : 0)  // a lone lead byte or a bad one
            broken[nameStart + offset + 1] = 0x28
            candidates.append(broken)
        }
        var brokenSubject = valid
        brokenSubject[19 + 9] = 0xFF
        candidates.append(brokenSubject)
        for (index, payload) in candidates.enumerated() {
            let decoder: Session? = payload.withUnsafeBufferPointer { buffer in
                var reader = ByteReader(buffer)
                guard let decoded = try? Session(from: &reader), reader.isAtEnd else { return nil }
                return decoded
            }
            let inPlace = payload.withUnsafeBufferPointer { try? SessionFields(parsing: $0) }
            XCTAssertEqual(inPlace != nil, decoder != nil, "candidate \(index)")
            if index == candidates.count - 1 { XCTAssertNil(inPlace, "0xFF in the subject") }
        }
    }

    func testUTF8CheckAgreesWithStringDecoding() {
        var samples: [[UInt8]] = [[], Array("plain ascii, longer than eight".utf8), Array("Zoë".utf8),
                                  [0xF0, 0x9F, 0x98, 0x80], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x80], [0xFF]]
        for byte in UInt8.min...UInt8.max { samples.append(Array("abcdefgh".utf8) + [byte] + Array("ijk".utf8)) }
        for sample in samples {
            let valid = String(validating: sample, as: UTF8.self) != nil
            XCTAssertEqual(sample.withUnsafeBufferPointer { ByteReader.isValidUTF8($0) }, valid, "\(sample)")
        }
    }
}
