import SidecarEvent
import SidecarHTTP

/// Moves one message body from a source queue to a destination queue as bytes arrive,
/// re-framing on the way: Content-Length bodies move chain by chain without copying; chunked
/// bodies are decoded (strictly) and re-chunked (or written raw for an HTTP/1.0 reader or an
/// HTTP/2 stream); until-close bodies are chunked for HTTP/1.1 readers. A chunked body's
/// trailer fields are dropped, or — `passesTrailers`, with a `TrailerSection` given to each
/// `relay` call — collected there: written after the last chunk when re-chunking (those its
/// forwarding lets pass), else kept for the caller (HTTP/2's trailers). The section lives
/// beside the relay, not in it: a relay holds no reference, so copying one is a plain copy.
struct BodyRelay {
    enum Source {
        case length(remaining: UInt64)
        case chunked(ChunkedDecoder)
        case untilClose
    }

    /// One chunked body's trailer section (validated `name: value` CRLF lines, not yet
    /// filtered) and the forwarding that decides which of its fields pass.
    final class TrailerSection {
        let forwarding: FieldForwarding
        var bytes: [UInt8] = []

        init(_ forwarding: FieldForwarding) { self.forwarding = forwarding }
    }

    enum Progress: Equatable { case needMore, done, invalid, tooLarge }

    private var source: Source
    private let chunkOutput: Bool
    private let limit: UInt64
    /// Body bytes moved so far (decoded length).
    private(set) var transferred: UInt64 = 0

    /// `limit` 0 means unlimited; `passesTrailers`: a chunked body's trailer fields go to the
    /// `TrailerSection` each `relay` call is given (else they are dropped).
    init(framing: BodyFraming, chunkOutput: Bool, limit: UInt64 = 0, passesTrailers: Bool = false) {
        switch framing {
        case .contentLength(let n): source = .length(remaining: n)
        case .chunked:
            source = .chunked(ChunkedDecoder(reportingTrailers: passesTrailers))
        case .untilClose: source = .untilClose
        case .none: source = .length(remaining: 0)
        }
        self.chunkOutput = chunkOutput
        self.limit = limit
    }

    var isUntilClose: Bool { if case .untilClose = source { return true } else { return false } }

    mutating func relay(from src: ByteQueue, to dst: ByteQueue, trailers: TrailerSection? = nil) -> Progress {
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
            let progress = decodeChunks(&decoder, trailers, from: src, to: dst)
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
        _ decoder: inout ChunkedDecoder, _ trailers: TrailerSection?, from src: ByteQueue, to dst: ByteQueue
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
            case .trailer(let range):
                trailers?.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[range]))
            case .needMoreData:
                break loop
            case .end:
                if chunkOutput { writeLastChunk(trailers, to: dst) }
                progress = .done
                break loop
            }
        }
        src.drain(index)
        return progress
    }

    /// The last chunk, the trailer fields that pass, and the end of the section.
    private func writeLastChunk(_ trailers: TrailerSection?, to dst: ByteQueue) {
        guard let trailers, !trailers.bytes.isEmpty else {
            dst.append("0\r\n\r\n")
            return
        }
        dst.append("0\r\n")
        trailers.bytes.withUnsafeBytes { section in
            TrailerFields.forEach(section, forwarding: trailers.forwarding) { name, value in
                dst.append(name.baseAddress, count: name.count)
                dst.append(": ")
                if value.count > 0 { dst.append(value.baseAddress, count: value.count) }
                dst.append("\r\n")
            }
        }
        dst.append("\r\n")
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
