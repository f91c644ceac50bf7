import CEvent
import SidecarHTTP

/// Moves one message body from a source evbuffer to a destination evbuffer as bytes arrive,
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

    mutating func relay(from src: OpaquePointer, to dst: OpaquePointer) -> Progress {
        switch source {
        case .length(let remaining):
            let available = UInt64(evbuffer_get_length(src))
            let n = min(remaining, available)
            if n > 0 {
                _ = evbuffer_remove_buffer(src, dst, Int(n))
                transferred += n
            }
            source = .length(remaining: remaining - n)
            return remaining == n ? .done : .needMore
        case .untilClose:
            let n = evbuffer_get_length(src)
            guard n > 0 else { return .needMore }
            if chunkOutput { appendChunkHeader(n, to: dst) }
            _ = evbuffer_add_buffer(dst, src)
            if chunkOutput { append("\r\n", to: dst) }
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
    mutating func finishAtEndOfStream(to dst: OpaquePointer) -> Bool {
        guard isUntilClose else { return false }
        if chunkOutput { append("0\r\n\r\n", to: dst) }
        return true
    }

    private mutating func decodeChunks(
        _ decoder: inout ChunkedDecoder, from src: OpaquePointer, to dst: OpaquePointer
    ) -> Progress {
        let length = evbuffer_get_length(src)
        guard length > 0, let base = evbuffer_pullup(src, length) else { return .needMore }
        let input = UnsafeRawBufferPointer(start: base, count: length)
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
                _ = evbuffer_add(dst, base + range.lowerBound, range.count)
                if chunkOutput { append("\r\n", to: dst) }
            case .needMoreData:
                break loop
            case .end:
                if chunkOutput { append("0\r\n\r\n", to: dst) }
                progress = .done
                break loop
            }
        }
        _ = evbuffer_drain(src, index)
        return progress
    }

    private func appendChunkHeader(_ size: Int, to dst: OpaquePointer) {
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
            _ = evbuffer_add(dst, raw.baseAddress, digits + 2)
        }
    }

    private func append(_ s: StaticString, to dst: OpaquePointer) {
        _ = evbuffer_add(dst, s.utf8Start, s.utf8CodeUnitCount)
    }
}
