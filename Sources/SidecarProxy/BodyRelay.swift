import SidecarEvent
import SidecarHTTP

/// Moves one message body from a source queue to a destination queue as bytes arrive,
/// re-framing on the way: Content-Length bodies move chain by chain without copying; chunked
/// bodies are decoded (strictly, trailers dropped) and re-chunked (or written raw for an
/// HTTP/1.0 reader); until-close bodies are chunked for HTTP/1.1 readers.
struct BodyRelay {
    enum Source {
        case length(remaining: UInt64)
        case chunked(ChunkedDecoder)
        case untilClose
    }

    enum Progress: Equatable { case needMore, done, invalid, tooLarge }

    private var source: Source
    private let chunkOutput: Bool
    private let limit: UInt64
    /// Body bytes moved so far (decoded length).
    private(set) var transferred: UInt64 = 0

    /// `limit` 0 means unlimited.
    init(framing: BodyFraming, chunkOutput: Bool, limit: UInt64 = 0) {
        switch framing {
        case .contentLength(let n): source = .length(remaining: n)
        case .chunked: source = .chunked(ChunkedDecoder())
        case .untilClose: source = .untilClose
        case .none: source = .length(remaining: 0)
        }
        self.chunkOutput = chunkOutput
        self.limit = limit
    }

    var isUntilClose: Bool { if case .untilClose = source { return true } else { return false } }

    mutating func relay(from src: ByteQueue, to dst: ByteQueue) -> Progress {
        switch source {
        case .length(let remaining):
            let available = UInt64(src.count)
            let n = min(remaining, available)
            if n > 0 {
                src.move(to: dst, max: Int(n))
                transferred += n
            }
            source = .length(remaining: remaining - n)
            return remaining == n ? .done : .needMore
        case .untilClose:
            let n = src.count
            guard n > 0 else { return .needMore }
            if chunkOutput { appendChunkHeader(n, to: dst) }
            src.move(to: dst)
            if chunkOutput { dst.append("\r\n") }
            transferred += UInt64(n)
            return .needMore
        case .chunked(var decoder):
            let progress = decodeChunks(&decoder, from: src, to: dst)
            source = .chunked(decoder)
            return progress
        }
    }

    /// The source closed: true when that ends the body properly (until-close framing);
    /// the terminating chunk is written for chunked readers.
    mutating func finishAtEndOfStream(to dst: ByteQueue) -> Bool {
        guard isUntilClose else { return false }
        if chunkOutput { dst.append("0\r\n\r\n") }
        return true
    }

    private mutating func decodeChunks(
        _ decoder: inout ChunkedDecoder, from src: ByteQueue, to dst: ByteQueue
    ) -> Progress {
        guard let input = src.unsafePrefix(src.count) else { return .needMore }
        var index = 0
        var progress = Progress.needMore
        loop: while true {
            let event: ChunkedDecoder.Event
            do { event = try decoder.next(input, index: &index) } catch {
                progress = .invalid
                break loop
            }
            switch event {
            case .data(let range):
                transferred += UInt64(range.count)
                if limit > 0 && transferred > limit {
                    progress = .tooLarge
                    break loop
                }
                if chunkOutput { appendChunkHeader(range.count, to: dst) }
                dst.append(input.baseAddress! + range.lowerBound, count: range.count)
                if chunkOutput { dst.append("\r\n") }
            case .needMoreData:
                break loop
            case .end:
                if chunkOutput { dst.append("0\r\n\r\n") }
                progress = .done
                break loop
            }
        }
        src.drain(index)
        return progress
    }

    private func appendChunkHeader(_ size: Int, to dst: ByteQueue) {
        var header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &header) { raw in
            var digits = 0
            var v = size
            repeat { digits += 1; v >>= 4 } while v > 0
            v = size
            for i in stride(from: digits - 1, through: 0, by: -1) {
                raw[i] = HexDigit.lower(UInt8(v & 0xf))
                v >>= 4
            }
            raw[digits] = 0x0D
            raw[digits + 1] = 0x0A
            dst.append(raw.baseAddress, count: digits + 2)
        }
    }
}
