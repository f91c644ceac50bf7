import CEvent
import SidecarHTTP

/// Space reserved at the end of an evbuffer for a head composed in place: `out` writes into
/// it (at most the `bound` reserved), `commit` appends what was written. One copy, no
/// intermediate array — and no closure, whose captured arrays would each be retained.
public struct ReservedHead {
    private var vec: iovec  // libevent's evbuffer_iovec is struct iovec on Linux
    public var out: HeadBuffer

    /// Nil if libevent could not allocate `bound` contiguous bytes.
    public init?(in buffer: OpaquePointer, bound: Int) {
        var vec = iovec()
        guard evbuffer_reserve_space(buffer, bound, &vec, 1) == 1, let base = vec.iov_base else { return nil }
        self.vec = vec
        out = HeadBuffer(base, capacity: min(vec.iov_len, bound))
    }

    /// Appends the written bytes to `buffer` (the one the space was reserved in).
    public mutating func commit(to buffer: OpaquePointer) -> Bool {
        vec.iov_len = out.count
        return evbuffer_commit_space(buffer, &vec, 1) == 0
    }
}
