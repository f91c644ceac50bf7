import CEvent
import Glibc

/// What a peek at the socket found.
public enum PreambleRead: Equatable {
    /// This many bytes, copied and still in the socket.
    case bytes(Int)
    /// Nothing yet (a spurious readiness).
    case nothing
    /// The peer closed (0) or the socket failed (errno).
    case ended(error: Int32)
}

/// A preamble is what a connection carries before its own data — a PROXY protocol header a
/// load balancer writes in front of the client's bytes, in the clear even when TLS follows.
/// Its owner peeks at the socket, takes exactly the preamble's bytes out of it and ends the
/// phase: what follows stays in the socket, so the stream's first read (or the TLS
/// handshake's) finds it there, as if the preamble had never been sent.
///
/// A readiness that finds bytes must take some of them or close the stream: the read
/// interest is level-triggered, so bytes left in the socket would report it again at once.
extension Stream {
    /// Copies what the socket holds, up to `buffer.count` bytes, into `buffer` without
    /// taking it out of the socket.
    public func peekPreamble(into buffer: UnsafeMutableRawBufferPointer) -> PreambleRead {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .nothing }
        let count = recv(fd, base, buffer.count, Int32(MSG_PEEK))
        if count > 0 { return .bytes(count) }
        if count == 0 { return .ended(error: 0) }
        let code = errno
        return code == EAGAIN || code == EWOULDBLOCK || code == EINTR ? .nothing : .ended(error: code)
    }

    /// Takes `count` bytes a peek saw out of the socket; false if they are not all there.
    public func consumePreamble(_ count: Int) -> Bool {
        guard count > 0 else { return true }
        guard count <= EventLoop.readScratchSize else { return false }
        return recv(fd, scratch, count, 0) == count
    }

    /// The preamble is read: from the next readiness on the stream reads as usual (bytes
    /// already waiting report at once, the read interest being level-triggered).
    public func endPreamble() {
        awaitsPreamble = false
    }
}
