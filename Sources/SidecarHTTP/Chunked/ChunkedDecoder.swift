/// Why a chunked body was refused (a server answers 400, a proxy reading upstream 502).
public enum ChunkedDecodingError: Error, Sendable, Hashable {
    /// Chunk size missing, signed, preceded by whitespace or followed by junk.
    case invalidChunkSize
    /// More than 16 hex digits.
    case chunkSizeTooLong
    /// Control character in a chunk extension.
    case invalidExtension
    /// Chunk-size line (size plus extensions) longer than the limit.
    case lineTooLong
    /// A line not ended by exactly CR LF (bare LF, bare CR, junk after the data).
    case missingCRLF
    /// Malformed trailer field line.
    case invalidTrailer
    /// Trailer section larger than the limit.
    case trailersTooLarge
}

/// Incremental decoder for `Transfer-Encoding: chunked` (RFC 9112 §7.1). Feed it whatever
/// bytes arrived; it yields ranges of body data inside those bytes without copying.
/// Trailer fields are validated and bounded, then discarded — or, `reportingTrailers`,
/// yielded as the ranges of their lines (`.trailer`), for a proxy that passes them on.
public struct ChunkedDecoder: Sendable {
    public struct Limits: Sendable, Hashable {
        /// Bytes of one chunk-size line after the hex digits (BWS and extensions).
        public var maxExtensionBytes: Int
        /// Bytes of the trailer fields, their CRLFs included.
        public var maxTrailerBytes: Int

        public init(maxExtensionBytes: Int = 4096, maxTrailerBytes: Int = 8192) {
            self.maxExtensionBytes = maxExtensionBytes
            self.maxTrailerBytes = maxTrailerBytes
        }
    }

    public enum Event: Sendable, Hashable {
        /// Body bytes at these indices of the input just given.
        case data(Range<Int>)
        /// Bytes of the trailer section at these indices (whole `name: value` CRLF lines once
        /// all of it has been yielded; a line may be cut between two inputs). Only when
        /// `reportingTrailers`; the section's final CRLF is not among them.
        case trailer(Range<Int>)
        /// All input consumed; feed more.
        case needMoreData
        /// The last chunk and trailers are complete; bytes from `index` on belong to the
        /// next message.
        case end
    }

    private enum State: UInt8 {
        case size, sizeWhitespace, chunkExtension, sizeLF
        case data, dataCR, dataLF
        case trailerStart, trailerName, trailerValue, trailerLF, finalLF
        case done

        /// `c`, read in this state, belongs to a trailer line (not the section's final CRLF).
        func isInTrailer(at c: UInt8) -> Bool {
            switch self {
            case .trailerName, .trailerValue, .trailerLF: return true
            case .trailerStart: return c != ASCII.cr
            default: return false
            }
        }
    }

    private let limits: Limits
    private var state = State.size
    private var chunkSize: UInt64 = 0
    private var digits = 0
    private var extensionBytes = 0
    private var remaining: UInt64 = 0
    private var trailerBytes = 0
    private let reportingTrailers: Bool

    public init(limits: Limits = Limits(), reportingTrailers: Bool = false) {
        self.limits = limits
        self.reportingTrailers = reportingTrailers
    }

    /// True once the final chunk and the trailer section have been read.
    public var isComplete: Bool { state == .done }

    /// Decodes from `input[index...]`, advancing `index` past what it consumed. Call again
    /// with the same input after `.data` until `.needMoreData` or `.end`.
    public mutating func next(
        _ input: UnsafeRawBufferPointer, index: inout Int
    ) throws(ChunkedDecodingError) -> Event {
        // Where this call's trailer bytes began (-1: none yet).
        var trailerRun = -1
        while index < input.count {
            let c = input[index]
            if reportingTrailers, trailerRun < 0, state.isInTrailer(at: c) { trailerRun = index }
            switch state {
            case .size:
                if let v = ASCII.hexValue(c) {
                    digits += 1
                    guard digits <= 16 else { throw .chunkSizeTooLong }
                    chunkSize = chunkSize << 4 | UInt64(v)
                } else {
                    guard digits > 0 else { throw .invalidChunkSize }
                    switch c {
                    case ASCII.cr: state = .sizeLF
                    case 0x3B:
                        try countExtensionByte()
                        state = .chunkExtension
                    case ASCII.sp, ASCII.htab:
                        try countExtensionByte()
                        state = .sizeWhitespace
                    default: throw .invalidChunkSize
                    }
                }
            case .sizeWhitespace:  // BWS is only allowed before ";"
                try countExtensionByte()
                if c == 0x3B { state = .chunkExtension } else if !ASCII.isOWS(c) { throw .invalidChunkSize }
            case .chunkExtension:
                if c == ASCII.cr {
                    state = .sizeLF
                } else {
                    guard ASCII.isFieldValueChar(c) else { throw .invalidExtension }
                    try countExtensionByte()
                }
            case .sizeLF:
                guard c == ASCII.lf else { throw .missingCRLF }
                if chunkSize == 0 {
                    state = .trailerStart
                } else {
                    remaining = chunkSize
                    state = .data
                }
            case .data:
                let n = Int(min(remaining, UInt64(input.count - index)))
                let range = index..<(index + n)
                index += n
                remaining -= UInt64(n)
                if remaining == 0 { state = .dataCR }
                return .data(range)
            case .dataCR:
                guard c == ASCII.cr else { throw .missingCRLF }
                state = .dataLF
            case .dataLF:
                guard c == ASCII.lf else { throw .missingCRLF }
                state = .size
                chunkSize = 0
                digits = 0
                extensionBytes = 0
            case .trailerStart:
                if c == ASCII.cr {
                    // The lines so far go out first; the next call comes back to this CR.
                    if trailerRun >= 0 { return .trailer(trailerRun..<index) }
                    state = .finalLF
                } else if c == ASCII.lf {
                    throw .missingCRLF
                } else {
                    guard ASCII.isTokenChar(c) else { throw .invalidTrailer }
                    try countTrailerByte()
                    state = .trailerName
                }
            case .trailerName:
                try countTrailerByte()
                if c == ASCII.colon { state = .trailerValue } else if !ASCII.isTokenChar(c) { throw .invalidTrailer }
            case .trailerValue:
                if c == ASCII.cr {
                    try countTrailerByte()
                    state = .trailerLF
                } else if c == ASCII.lf {
                    throw .missingCRLF
                } else {
                    guard ASCII.isFieldValueChar(c) else { throw .invalidTrailer }
                    try countTrailerByte()
                }
            case .trailerLF:
                guard c == ASCII.lf else { throw .missingCRLF }
                try countTrailerByte()
                state = .trailerStart
            case .finalLF:
                guard c == ASCII.lf else { throw .missingCRLF }
                state = .done
                index += 1
                return .end
            case .done:
                return .end
            }
            index += 1
        }
        if trailerRun >= 0 { return .trailer(trailerRun..<index) }
        return state == .done ? .end : .needMoreData
    }

    private mutating func countExtensionByte() throws(ChunkedDecodingError) {
        extensionBytes += 1
        if extensionBytes > limits.maxExtensionBytes { throw .lineTooLong }
    }

    private mutating func countTrailerByte() throws(ChunkedDecodingError) {
        trailerBytes += 1
        if trailerBytes > limits.maxTrailerBytes { throw .trailersTooLarge }
    }
}
