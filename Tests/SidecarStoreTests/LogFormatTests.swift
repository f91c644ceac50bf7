import XCTest

@testable import SidecarStore

final class LogFormatTests: XCTestCase {
    func testCRC32MatchesTheStandardCheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([]), 0)
        let whole = CRC32.checksum(Array("hello, world".utf8))
        XCTAssertEqual(CRC32.checksum(Array(", world".utf8), continuing: CRC32.checksum(Array("hello".utf8))), whole)
    }

    func testEveryRecordRoundTrips() {
        let records: [LogRecord] = [
            .revokeSession(Key128(sessionID(3)), expiresAt: 1_700_000_000),
            .revokeSubject("001234.abcdef.0123", SubjectRevocation(cutoffMs: 1_700_000_000_123, keepUntil: 1_700_100_000)),
            .claim(ClaimKey(namespace: .notificationJTI, key: Key128(Array("jti".utf8))), expiresAt: -5),
            .claim(ClaimKey(namespace: ClaimNamespace(rawValue: 200), key: Key128(high: .max, low: 0)), expiresAt: .max),
            .enqueueForward(PendingForward(id: ForwardID(rawValue: 7), payload: Array("{}".utf8), enqueuedAt: 9)),
            .enqueueForward(PendingForward(id: ForwardID(rawValue: 8), payload: [], enqueuedAt: 9, attempts: 3, lastAttemptAt: 12)),
            .ackForward(ForwardID(rawValue: .max)),
            .forwardAttempt(ForwardID(rawValue: 1), at: 42),
            .forwardSequence(next: 99),
        ]
        for record in records {
            let framed = record.framed()
            XCTAssertEqual(framed.count, record.framedByteCount, "\(record)")
            var decoded: [LogRecord] = []
            let replay = LogReplay.replay(framed, from: 0) { decoded.append($0) }
            XCTAssertEqual(decoded, [record])
            XCTAssertEqual(replay.goodEnd, framed.count)
        }
    }

    func testKeysOfSixteenBytesAreTakenAsTheyAre() {
        let id = sessionID(5)
        XCTAssertEqual(Key128(id).bytes, id)
        XCTAssertNotEqual(Key128(Array(id.prefix(15))).bytes, Array(id.prefix(15)) + [0])
        XCTAssertEqual(Key128(Array("state".utf8)), Key128(Array("state".utf8)))
        XCTAssertEqual(Key128(high: 0x0403_0201, low: 0).description, "01020304…")
    }

    /// A record with a good checksum but a type this version does not know is skipped.
    func testAnUnknownRecordTypeIsSkippedNotFatal() {
        var body: [UInt8] = [0x7F, 1, 2, 3]
        var framed = [UInt8]()
        withUnsafeBytes(of: UInt32(body.count).littleEndian) { framed.append(contentsOf: $0) }
        let crc = CRC32.checksum(body, continuing: CRC32.checksum(framed))
        withUnsafeBytes(of: crc.littleEndian) { framed.append(contentsOf: $0) }
        framed += body
        body = LogRecord.ackForward(ForwardID(rawValue: 1)).framed()
        var decoded: [LogRecord] = []
        let replay = LogReplay.replay(framed + body, from: 0) { decoded.append($0) }
        XCTAssertEqual(decoded, [.ackForward(ForwardID(rawValue: 1))])
        XCTAssertEqual(replay.unreadableOffsets, [0])
        XCTAssertFalse(replay.foundCorruption)
    }
}
