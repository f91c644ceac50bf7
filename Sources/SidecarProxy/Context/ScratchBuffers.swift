import SidecarHTTP

/// A loop's reusable buffers: the arrays of heads it is done with, refilled by its next
/// parses (no allocation per message), and the builder heads are composed in. Loop thread
/// only; the builder is never used re-entrantly.
final class ScratchBuffers {
    /// Composes the head of a local answer before it is written out in one piece.
    var line = ByteBuilder()
    /// Bounded: at most `spareHeadLimit` kept, none larger than 8 KiB.
    private var spareHeads: [HeadArrays] = []
    private static let spareHeadLimit = 64

    /// Arrays for the next head parsed on this loop.
    func spareHead() -> HeadArrays { spareHeads.popLast() ?? HeadArrays() }

    /// Keeps the arrays of a finished head (or unused spares) for a later parse.
    func recycle(_ arrays: HeadArrays) {
        guard spareHeads.count < Self.spareHeadLimit, arrays.capacity <= 8192 else { return }
        spareHeads.append(arrays)
    }
}
