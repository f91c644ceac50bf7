/// Reads the records of a store log and decides what a damaged stretch means.
///
/// Appends are one `pwrite` of one whole record followed by `fdatasync`, and nothing is
/// written after a record before it is on disk. So a crash can only damage the last
/// record, and only in these ways: the file ends inside it (a prefix of its bytes), or
/// its bytes read as zeros or garbage up to the end of the file. Such a **torn tail** is
/// expected and harmless: the change was never reported as done. It is dropped and the
/// file cut back to the last good record.
///
/// Damage anywhere else (a bad disk, a stray write) is **corruption**, and the rule is:
/// - a record whose frame is intact but whose checksum fails, followed by a good record, is
///   skipped (records are independent facts; the others stay valid) and reported with its
///   offset;
/// - damage after which no record boundary can be trusted stops the replay there: what came
///   before is kept, the rest is dropped and reported with the offset.
/// Either way the store keeps running — refusing to start would take every sign-in down
/// for a damage an operator can inspect afterwards — and the file store first saves a copy
/// of the damaged file beside it (`<path>.corrupt-<time>`), so nothing is destroyed.
struct LogReplay {
    /// Where appends continue: the end of the last record kept.
    var goodEnd: Int
    /// Bytes of a torn last record dropped (0 when the log ended cleanly).
    var tornBytes = 0
    /// Offsets of corrupt records skipped.
    var skippedOffsets: [Int] = []
    /// Records with a good checksum but an unknown type or layout (written by something
    /// newer?), skipped.
    var unreadableOffsets: [Int] = []
    /// Where replay stopped at corruption, dropping everything from there; nil otherwise.
    var stoppedAt: Int?
    /// Records applied.
    var recordCount = 0

    /// Corruption was found: the file should be copied aside before it is repaired.
    var foundCorruption: Bool { !skippedOffsets.isEmpty || stoppedAt != nil }

    private enum Frame {
        case valid(bodyRange: Range<Int>)
        /// The file ends before the record does.
        case incomplete
        /// A length no record has.
        case impossibleLength
        /// The record's frame fits but its checksum does not match; `end` is where it ends.
        case badChecksum(end: Int)
    }

    /// Replays `contents[start...]`, handing each good record to `apply` in order.
    static func replay(_ contents: [UInt8], from start: Int, apply: (LogRecord) -> Void) -> LogReplay {
        contents.withUnsafeBytes { bytes in
            var outcome = LogReplay(goodEnd: start)
            var offset = start
            while offset < bytes.count {
                switch frame(in: bytes, at: offset) {
                case .valid(let body):
                    if let record = LogRecord.decode(body: UnsafeRawBufferPointer(rebasing: bytes[body])) {
                        apply(record)
                        outcome.recordCount += 1
                    } else {
                        outcome.unreadableOffsets.append(offset)
                    }
                    offset = body.upperBound
                    outcome.goodEnd = offset
                    continue
                case .incomplete:
                    outcome.tornBytes = bytes.count - offset
                case .badChecksum(let end) where end == bytes.count:
                    outcome.tornBytes = bytes.count - offset  // the last record, not all on disk
                case .badChecksum(let end):
                    if case .valid = frame(in: bytes, at: end) {
                        outcome.skippedOffsets.append(offset)
                        offset = end
                        outcome.goodEnd = offset
                        continue
                    }
                    outcome.classifyDamage(bytes, at: offset)
                case .impossibleLength:
                    outcome.classifyDamage(bytes, at: offset)
                }
                break
            }
            return outcome
        }
    }

    /// Damage at `offset` that is not simply a short last record: zeros to the end of the file
    /// are a torn tail (blocks allocated but never written); anything else is corruption.
    private mutating func classifyDamage(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        if bytes[offset...].allSatisfy({ $0 == 0 }) {
            tornBytes = bytes.count - offset
        } else {
            stoppedAt = offset
        }
    }

    private static func frame(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Frame {
        guard bytes.count - offset >= LogRecord.frameHeaderBytes else { return .incomplete }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let storedCRC = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
        guard length >= 1, length <= LogRecord.maximumBodyBytes else { return .impossibleLength }
        let bodyStart = offset + LogRecord.frameHeaderBytes
        guard bytes.count - bodyStart >= length else { return .incomplete }
        let body = bodyStart..<bodyStart + length
        let lengthCRC = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4]))
        let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[body]), continuing: lengthCRC)
        return crc == storedCRC ? .valid(bodyRange: body) : .badChecksum(end: body.upperBound)
    }

    /// One line per finding, for the start-up log.
    func notes(path: String) -> [String] {
        var notes: [String] = []
        if tornBytes > 0 {
            notes.append("store \(path): dropped an incomplete last record (\(tornBytes) bytes at offset \(goodEnd)), left by an interrupted write")
        }
        for offset in skippedOffsets {
            notes.append("store \(path): CORRUPT record at offset \(offset) skipped; the records around it were kept")
        }
        for offset in unreadableOffsets {
            notes.append("store \(path): unreadable record (unknown type) at offset \(offset) skipped")
        }
        if let stoppedAt {
            notes.append("store \(path): CORRUPT data at offset \(stoppedAt); replay stopped there and the rest of the file was dropped")
        }
        return notes
    }
}
