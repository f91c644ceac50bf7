/// The request bodies whose content-length promised a size, counted as their DATA arrives:
/// a request whose DATA frames do not add up to its content-length is malformed (RFC 9113
/// §8.1.1). Without this, bytes past the promised length would reach the exchange after its
/// body, where an HTTP/1.1 reader takes them for the next request.
struct H2DeclaredBodies {
    enum Verdict {
        case deliver
        /// Past the promised length: reset the stream (once) and drop the bytes.
        case refuse
        /// The stream was refused already: drop the bytes.
        case drop
    }

    /// Bytes still promised per stream; `refused` once the stream broke its promise.
    private var remaining: [Int32: Int64] = [:]
    private static let refused: Int64 = -1

    var isEmpty: Bool { remaining.isEmpty }

    mutating func expect(_ stream: Int32, length: Int64) {
        remaining[stream] = length
    }

    mutating func received(_ stream: Int32, count: Int) -> Verdict {
        guard let left = remaining[stream] else { return .deliver }
        guard left != Self.refused else { return .drop }
        guard Int64(count) <= left else {
            remaining[stream] = Self.refused
            return .refuse
        }
        remaining[stream] = left - Int64(count)
        return .deliver
    }

    /// The stream's END_STREAM: whether every promised byte came (true when nothing was promised).
    mutating func ended(_ stream: Int32) -> Bool {
        guard !remaining.isEmpty, let left = remaining.removeValue(forKey: stream) else { return true }
        return left == 0
    }

    mutating func forget(_ stream: Int32) {
        if !remaining.isEmpty { remaining[stream] = nil }
    }
}
