import CEvent
import COpenSSL
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
    /// Bytes (or the end) arrived while the stream awaits its preamble (`Stream+Preamble.swift`):
    /// the delegate reads it with `peekPreamble`/`consumePreamble` and ends it with `endPreamble`.
    func streamPreambleReadable(_ stream: Stream)
}

/// Carries a stream that has no socket of its own: an HTTP/2 stream, whose bytes travel in
/// the frames of its connection. The carrier appends to `input` and calls the delegate as a
/// socket would; it takes what the owner writes to `output` as the window allows, marking it
/// with `recordCarriedWrite`.
public protocol StreamCarrier: AnyObject {
    /// The owner flushed: `output` has bytes for the carrier.
    func carriedStreamHasOutput(_ stream: Stream)
    /// The owner resumed reading: it has taken input the carrier may acknowledge.
    func carriedStreamWantsInput(_ stream: Stream)
    /// The owner closed the stream (`shutdownWrite` counts: the response is complete).
    func carriedStreamClosed(_ stream: Stream)
}

extension StreamDelegate {
    public func streamDidHandshake(_ stream: Stream) {}
    public func streamPreambleReadable(_ stream: Stream) { stream.endPreamble() }
}

/// A non-blocking socket with an input and an output `ByteQueue`; with a `TLSServerContext`,
/// the same over server-side TLS (`Stream+TLS.swift`): `input` and `output` then hold
/// plaintext and the owner cannot tell the difference; the records go through `wire`.
///
/// Syscall discipline (the proxy's throughput depends on it): the read interest is one
/// persistent level-triggered event registered for the stream's whole life; each readiness
/// costs exactly one `read()` into the loop's scratch buffer, appended to `input` (never
/// `evbuffer_read`, which adds an `ioctl(FIONREAD)` per call); reads are `recv` and writes
/// `send`/`sendmsg` (`sendOutput`), socket calls, never the VFS's `read`/`writev`. The write
/// interest is added only when a write would block.
public final class Stream {
    public let fd: Int32
    public let input: ByteQueue
    public let output: ByteQueue
    /// What goes on the socket: `output` itself for plain streams; for TLS streams the
    /// records `SSL_write` made of it (`TLSWireBIO`), sent the same way.
    let wire: ByteQueue
    /// Safe unretained: every delegate holds its stream strongly and nothing else keeps it,
    /// so the stream and its callbacks end no later than the delegate. Not retained: the
    /// reference would run both ways; not weak: that costs a side-table load per callback.
    public unowned(unsafe) var delegate: (any StreamDelegate)?
    public internal(set) var isClosed = false
    public private(set) var isReadPaused = false
    /// Bytes written to the socket so far: an owner compares it with an earlier reading to
    /// tell a slow reader (it moved) from a stalled one without a callback per write.
    public internal(set) var bytesWritten: UInt64 = 0
    var connecting = false
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    var writeArmed = false
    let scratch: UnsafeMutableRawPointer  // the loop's; streams never outlive it
    /// Not retained (streams never outlive their loop); unmanaged because an `unowned(unsafe)`
    /// reference is still retained and released around every call made through it.
    private let loop: Unmanaged<EventLoop>
    var isFlushDeferred = false
    /// A batched send (`SendBatch`) whose outcome is unknown: reported as a failed write.
    var batchedSendFailure: Int32 = 0
    /// Server-side TLS state; nil for plain TCP and unix sockets (one nil check per read
    /// and per flush is all plain streams pay for it).
    var tls: TLSState?
    /// The owner reads what precedes the stream's data from the socket itself (see
    /// `Stream+Preamble.swift`); until it ends, reading neither fills `input` nor feeds TLS.
    public internal(set) var awaitsPreamble: Bool
    /// Set for a carried stream (`init(loop:carrier:)`, whose `fd` is -1), nil for a socket.
    /// Sockets pay one compare of `fd` per flush, resume and close for it.
    public private(set) unowned(unsafe) var carrier: (any StreamCarrier)?
    /// The carrier's name for this stream (an HTTP/2 stream id), so that its callbacks find
    /// their stream without a table keyed by object.
    public var carrierTag: Int32 = 0
    /// `carrier != nil` without reading the reference (a read retains and releases it).
    public let isCarried: Bool

    /// `tls`: serve TLS on the accepted socket `fd` (the handshake runs first; nothing is
    /// reported to the delegate before it completes). `clientTLS`: speak TLS as the client on
    /// the connected socket, with this `SSL` (the stream owns it from now on), once the owner
    /// calls `startTLSHandshake`. `preamble`: the delegate reads a preamble first
    /// (`streamPreambleReadable`), in the clear, before any TLS.
    public init(
        loop: EventLoop, fd: Int32, connecting: Bool = false, tls context: TLSServerContext? = nil,
        clientTLS: OpaquePointer? = nil, preamble: Bool = false
    ) {
        self.fd = fd
        isCarried = false
        awaitsPreamble = preamble
        input = ByteQueue(evbuffer_new())
        output = ByteQueue(evbuffer_new())
        self.connecting = connecting
        if let context {
            tls = TLSState(ssl: context.makeSSL())
            wire = ByteQueue(evbuffer_new())
        } else if let clientTLS {
            SSL_set_connect_state(clientTLS)
            tls = TLSState(ssl: clientTLS)
            wire = ByteQueue(evbuffer_new())
        } else {
            wire = output
        }
        scratch = loop.readScratch
        self.loop = .passUnretained(loop)
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
        if tls != nil { attachTLS() }
    }

    /// A stream without a socket, carried by `carrier` (see `StreamCarrier`).
    public init(loop: EventLoop, carrier: any StreamCarrier) {
        fd = -1
        isCarried = true
        awaitsPreamble = false
        input = ByteQueue(evbuffer_new())
        output = ByteQueue(evbuffer_new())
        wire = output
        scratch = loop.readScratch
        self.loop = .passUnretained(loop)
        self.carrier = carrier
    }

    // The carried stream's side of flush, resume and close: out of line, so that a socket's
    // paths stay as small as they were (a compare of `fd`) and keep being inlined.
    @inline(never) func carriedFlush() -> Int32 {
        carrier?.carriedStreamHasOutput(self)
        return 0
    }

    @inline(never) func carriedResume() { carrier?.carriedStreamWantsInput(self) }

    @inline(never) func carriedClose() { carrier?.carriedStreamClosed(self) }

    /// The carrier took `count` bytes of `output` into its frames.
    public func recordCarriedWrite(_ count: Int) { bytesWritten &+= UInt64(count) }

    deinit {
        // A carried stream's carrier may be gone by now: it is not told of a close it cannot see.
        if fd < 0 { isClosed = true } else { close() }
        tls?.free()
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
        input.deallocate()
        output.deallocate()
        if wire.buffer != output.buffer { wire.deallocate() }
    }

    /// Bytes not yet on the socket (for TLS: plaintext not yet encrypted and records not yet sent).
    public var pendingOutput: Int {
        wire.buffer == output.buffer ? output.count : output.count + wire.count
    }
    public var pendingInput: Int { input.count }

    /// Writes queued output now; arms the write interest only if the kernel would block.
    /// Returns 0, or the errno of a failed write (the caller decides what that means).
    @discardableResult
    public func flush() -> Int32 {
        guard !isClosed else { return EPIPE }
        if fd < 0 { return carriedFlush() }
        guard !connecting else { return 0 }
        if tls != nil {
            let error = encryptOutput()
            if error != 0 { return error }
        }
        return sendWire()
    }

    /// Sends `wire` until it is empty or the kernel is full (then the write interest is armed).
    func sendWire() -> Int32 {
        while wire.count > 0 {
            let (written, kernelFull) = sendOutput()
            if written > 0 { bytesWritten &+= UInt64(written) }
            if written < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK { break }
                if code == EINTR { continue }
                return code == 0 ? EPIPE : code
            }
            if kernelFull { break }  // partial write: wait for the socket to drain
        }
        if wire.count > 0 {
            armWrite()
        } else if writeArmed {
            disarmWrite()
        }
        return 0
    }

    /// Chains of `output` one send offers at most (a response head and its body are two).
    public static let sendChains = 16

    /// One `send` of the first chain of `wire`, or one `sendmsg` of its first
    /// `sendChains` chains, and drains what was written: socket calls skip the VFS layer
    /// that `writev` (libevent's `evbuffer_write`) goes through, its file lookup with
    /// position lock and, for one buffer, the iovec import (perf: ~3 % of the proxy's time
    /// per request). Returns the bytes written (-1 with errno) and whether the kernel took
    /// less than was offered.
    private func sendOutput() -> (written: Int, kernelFull: Bool) {
        let (written, offered) = withUnsafeTemporaryAllocation(of: iovec.self, capacity: Self.sendChains) {
            chains -> (Int, Int) in
            guard let vectors = chains.baseAddress else { return (0, 0) }
            let (count, offered) = peekOutput(into: vectors)
            guard count > 0 else { return (0, 0) }
            if count == 1 {
                return (Glibc.send(fd, vectors[0].iov_base, vectors[0].iov_len, Int32(MSG_NOSIGNAL)), offered)
            }
            var message = msghdr()
            message.msg_iov = vectors
            message.msg_iovlen = count
            return (offered == 0 ? 0 : Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL)), offered)
        }
        if offered == 0 {
            // Only empty chains in front (libevent rarely leaves one): its own writev skips them.
            let fallback = evbuffer_write(wire.buffer, fd)
            return (Int(fallback), true)
        }
        if written > 0 { wire.drain(written) }
        return (written, written < offered)
    }

    /// The first `sendChains` chains of `wire` described in `vectors` (room for
    /// `sendChains`): how many there are and how many bytes they hold.
    func peekOutput(into vectors: UnsafeMutablePointer<iovec>) -> (count: Int, bytes: Int) {
        // libevent's evbuffer_iovec is struct iovec (a macro where the platform has one).
        let count = min(Int(evbuffer_peek(wire.buffer, -1, nil, vectors, Int32(Self.sendChains))), Self.sendChains)
        var bytes = 0
        for i in 0..<max(count, 0) { bytes += vectors[i].iov_len }
        return (count, bytes)
    }

    /// Writes queued output once the loop has run this iteration's other callbacks. A proxy
    /// then writes the requests (or responses) of one iteration in a burst: an upstream that
    /// shares the core is woken once per burst instead of once per request, and preempts the
    /// proxy that much less. The caller has moved on by the time the write happens, so it
    /// hears of it as of a write that had blocked: `streamDidDrain` once the output is empty,
    /// or a failed write as a failed read (`stream(_:didRead: 0, error:)`).
    public func flushAtEndOfIteration() {
        guard !isFlushDeferred, !isClosed else { return }
        if fd < 0 {
            _ = carriedFlush()
            return
        }
        isFlushDeferred = true
        loop._withUnsafeGuaranteedRef { $0.deferFlush(self) }
    }

    func writeDeferredOutput() {
        guard isFlushDeferred else { return }
        isFlushDeferred = false
        guard !isClosed else { return }
        let error = batchedSendFailure != 0 ? batchedSendFailure : flush()
        if error != 0 {
            delegate?.stream(self, didRead: 0, error: error)
        } else if pendingOutput == 0 {
            delegate?.streamDidDrain(self)
        }
    }

    /// Stops reading (backpressure); costs one epoll_ctl, only when a buffer is full.
    public func pauseReading() {
        guard !isReadPaused, !isClosed else { return }
        isReadPaused = true
        if let readEvent { _ = event_del(readEvent) }
    }

    public func resumeReading() {
        guard isReadPaused, !isClosed else { return }
        isReadPaused = false
        if fd < 0 {
            carriedResume()
        } else if !connecting {
            _ = event_add(readEvent, nil)
        }
    }

    /// Closes the socket and stops all events; buffers stay readable until deinit.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if fd < 0 {
            carriedClose()
            return
        }
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
        if awaitsPreamble {
            delegate?.streamPreambleReadable(self)
            return
        }
        if tls != nil { return readTLS() }
        // recv, not read: a socket call skips the VFS layer (see `sendOutput`).
        let count = Glibc.recv(fd, scratch, EventLoop.readScratchSize, 0)
        if count > 0 {
            guard input.append(scratch, count: count) else {
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
        } else if output.count == 0 {
            delegate?.streamDidDrain(self)
        }
    }
}
