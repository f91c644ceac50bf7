import CEvent
import SidecarHTTP

/// Composes a head directly in `buffer`'s free space: reserves `bound` contiguous bytes
/// (an upper bound of what `body` writes), lets `body` fill them through a `HeadBuffer`,
/// commits what was written. False if libevent could not allocate the space.
public func writeHead(into buffer: OpaquePointer, bound: Int, _ body: (inout HeadBuffer) -> Void) -> Bool {
    var vec = iovec()  // libevent's evbuffer_iovec is struct iovec on Linux
    guard evbuffer_reserve_space(buffer, bound, &vec, 1) == 1, let base = vec.iov_base else { return false }
    var head = HeadBuffer(base, capacity: min(vec.iov_len, bound))
    body(&head)
    vec.iov_len = head.count
    return evbuffer_commit_space(buffer, &vec, 1) == 0
}
