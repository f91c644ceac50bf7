import CEvent
import Glibc

/// What a stream reports to its owner. All calls happen on the stream's loop thread.
public protocol StreamDelegate: AnyObject {
    /// New bytes were appended to `stream.input` (`count > 0`), or the peer closed / failed
    /// (`count == 0`: end of stream; `error != 0`: errno).
    func stream(_ stream: Stream, didRead count: Int, error: Int32)
    /// Everything queued in `stream.output` has been written after a write had blocked.
    func streamDidDrain(_ stream: Stream)
    /// A non-blocking connect finished (`error == 0`) or failed.
    func stream(_ stream: Stream, didConnect error: Int32)
    /// A TLS stream completed its handshake; application data may follow at once.
    func streamDidHandshake(_ stream: Stream)
}

extension StreamDelegate {
    public func streamDidHandshake(_ stream: Stream) {}
}

/// A non-blocking socket with an input and an output evbuffer; with a `TLSServerContext`,
/// the same over server-side TLS (`Stream+TLS.swift`): `input` and `output` then hold
/// plaintext and the owner cannot tell the difference.
///
/// Syscall discipline (the proxy's throughput depends on it): the read interest is one
/// persistent level-triggered event registered for the stream's whole life; each readiness
/// costs exactly one `read()` into the loop's scratch buffer, appended to `input` (never
/// `evbuffer_read`, which adds an `ioctl(FIONREAD)` per call). Output is written immediately with one `writev`
/// (`evbuffer_write`); the write interest is added only when a write would block.
public final class Stream {
    public let fd: Int32
    public let input: OpaquePointer
    public let output: OpaquePointer
    public unowned(unsafe) var delegate: (any StreamDelegate)?
    public internal(set) var isClosed = false
    public private(set) var isReadPaused = false
    /// Bytes written to the socket so far: an owner compares it with an earlier reading to
    /// tell a slow reader (it moved) from a stalled one without a callback per write.
    public internal(set) var bytesWritten: UInt64 = 0
    private var connecting = false
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    var writeArmed = false
    let scratch: UnsafeMutableRawPointer  // the loop's; streams never outlive it
    private unowned(unsafe) let loop: EventLoop
    private var isFlushDeferred = false
    /// Server-side TLS state; nil for plain TCP and unix sockets (one nil check per read
    /// and per flush is all plain streams pay for it).
    var tls: TLSState?

    /// `tls`: serve TLS on the accepted socket `fd` (the handshake runs first; nothing is
    /// reported to the delegate before it completes).
    public init(loop: EventLoop, fd: Int32, connecting: Bool = false, tls context: TLSServerContext? = nil) {
        self.fd = fd
        input = evbuffer_new()
        output = evbuffer_new()
        self.connecting = connecting
        if let context { tls = TLSState(ssl: context.makeSSL(fd: fd)) }
        scratch = loop.readScratch
        self.loop = loop
        let context = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, context in
            guard let context else { return }
            Unmanaged<Stream>.fromOpaque(context).takeUnretainedValue().readReady()
        }, context)
        writeEvent = event_new(loop.base, fd, Int16(EV_WRITE | EV_PERSIST), { _, _, context in
            guard let context else { return }
            Unmanaged<Stream>.fromOpaque(context).takeUnretainedValue().writeReady()
        }, context)
        if connecting {
            armWrite()
        } else {
            _ = event_add(readEvent, nil)
        }
    }

    deinit {
        close()
        tls?.free()
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
        evbuffer_free(input)
        evbuffer_free(output)
    }

    public var pendingOutput: Int { evbuffer_get_length(output) }
    public var pendingInput: Int { evbuffer_get_length(input) }

    /// Writes queued output now; arms the write interest only if the kernel would block.
    /// Returns 0, or the errno of a failed write (the caller decides what that means).
    @discardableResult
    public func flush() -> Int32 {
        guard !isClosed else { return EPIPE }
        guard !connecting else { return 0 }
        if tls != nil { return flushTLS() }
        while evbuffer_get_length(output) > 0 {
            let written = evbuffer_write(output, fd)
            if written > 0 { bytesWritten &+= UInt64(written) }
            if written < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK { break }
                if code == EINTR { continue }
                return code == 0 ? EPIPE : code
            }
            if evbuffer_get_length(output) > 0 { break }  // partial write: the kernel is full
        }
        if evbuffer_get_length(output) > 0 {
            armWrite()
        } else if writeArmed {
            disarmWrite()
        }
        return 0
    }

    /// Writes queued output once the loop has run this iteration's other callbacks. A proxy
    /// then writes the requests (or responses) of one iteration in a burst: an upstream that
    /// shares the core is woken once per burst instead of once per request, and preempts the
    /// proxy that much less. The caller has moved on by the time the write happens, so it
    /// hears of it as of a write that had blocked: `streamDidDrain` once the output is empty,
    /// or a failed write as a failed read (`stream(_:didRead: 0, error:)`).
    public func flushAtEndOfIteration() {
        guard !isFlushDeferred, !isClosed else { return }
        isFlushDeferred = true
        loop.deferFlush(self)
    }

    func writeDeferredOutput() {
        guard isFlushDeferred else { return }
        isFlushDeferred = false
        guard !isClosed else { return }
        let error = flush()
        if error != 0 {
            delegate?.stream(self, didRead: 0, error: error)
        } else if evbuffer_get_length(output) == 0 {
            delegate?.streamDidDrain(self)
        }
    }

    /// Stops reading (backpressure); costs one epoll_ctl, only when a buffer is full.
    public func pauseReading() {
        guard !isReadPaused, !isClosed else { return }
        isReadPaused = true
        _ = event_del(readEvent)
    }

    public func resumeReading() {
        guard isReadPaused, !isClosed else { return }
        isReadPaused = false
        if !connecting { _ = event_add(readEvent, nil) }
    }

    /// Closes the socket and stops all events; buffers stay readable until deinit.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if let readEvent { _ = event_del(readEvent) }
        if let writeEvent { _ = event_del(writeEvent) }
        Socket.close(fd)
    }

    func armWrite() {
        guard !writeArmed else { return }
        writeArmed = true
        _ = event_add(writeEvent, nil)
    }

    func disarmWrite() {
        writeArmed = false
        _ = event_del(writeEvent)
    }

    private func readReady() {
        guard !isClosed else { return }
        if tls != nil { return readTLS() }
        let count = CEvent.read(fd, scratch, EventLoop.readScratchSize)
        if count > 0 {
            guard evbuffer_add(input, scratch, count) == 0 else {
                delegate?.stream(self, didRead: 0, error: ENOMEM)
                return
            }
            delegate?.stream(self, didRead: count, error: 0)
        } else if count == 0 {
            delegate?.stream(self, didRead: 0, error: 0)
        } else {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return }
            delegate?.stream(self, didRead: 0, error: code)
        }
    }

    private func writeReady() {
        guard !isClosed else { return }
        if connecting {
            connecting = false
            let error = Socket.pendingError(fd)
            disarmWrite()
            if error == 0 {
                if !isReadPaused { _ = event_add(readEvent, nil) }
            }
            delegate?.stream(self, didConnect: error)
            return
        }
        if tls != nil { return writeReadyTLS() }
        let error = flush()
        if error != 0 {
            delegate?.stream(self, didRead: 0, error: error)
        } else if evbuffer_get_length(output) == 0 {
            delegate?.streamDidDrain(self)
        }
    }
}
