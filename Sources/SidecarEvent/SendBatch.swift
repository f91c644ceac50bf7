import CEvent
import CSendRing
import Glibc

/// Sends the output the streams deferred to the end of a loop iteration in one system call
/// (io_uring), where plain `send`s cost one call each.
///
/// Why it matters more than the calls saved: on a core shared with the upstream, the first
/// request sent upstream wakes it, and the kernel preempts the proxy when that `send` returns
/// to user space. The upstream then answers that one request, sleeps, and is woken again for
/// the rest. Sent in one call, every request of the iteration is queued before the proxy can
/// be preempted, and the upstream answers them in one wake-up.
///
/// Only what the kernel took is drained: a stream it did not take (a full socket, an error)
/// keeps its output for the plain `flush` that follows. Where the kernel refuses io_uring
/// (a seccomp filter, `kernel.io_uring_disabled`), the loop has no batch and sends as before.
final class SendBatch {
    /// Streams per system call; more are sent in further calls.
    static let capacity = 64

    private var ring: OpaquePointer?
    private let fds: UnsafeMutablePointer<Int32>
    private let messages: UnsafeMutablePointer<msghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let results: UnsafeMutablePointer<Int>
    private let streams: UnsafeMutablePointer<Unmanaged<Stream>>

    /// nil where the kernel refuses io_uring.
    init?() {
        guard let ring = sidecar_send_ring_new(UInt32(Self.capacity)) else { return nil }
        self.ring = ring
        fds = .allocate(capacity: Self.capacity)
        messages = .allocate(capacity: Self.capacity)
        vectors = .allocate(capacity: Self.capacity * Stream.sendChains)
        results = .allocate(capacity: Self.capacity)
        streams = .allocate(capacity: Self.capacity)
    }

    deinit {
        sidecar_send_ring_free(ring)
        fds.deallocate()
        messages.deallocate()
        vectors.deallocate()
        results.deallocate()
        streams.deallocate()
    }

    /// System calls made so far.
    private(set) var calls = 0

    /// Whether the ring still works; after a failure of the ring itself the loop drops it.
    var isUsable: Bool { ring != nil }

    /// Sends the deferred output of `pending` (those a batched send can take: plain sockets,
    /// connected, with output), `capacity` streams per call.
    func send(_ pending: [Unmanaged<Stream>]) {
        var count = 0
        for entry in pending {
            let added = entry._withUnsafeGuaranteedRef { stream in
                stream.prepareBatchedSend(vectors: vectors + count * Stream.sendChains, message: messages + count)
            }
            guard added else { continue }
            fds[count] = entry._withUnsafeGuaranteedRef { $0.fd }
            streams[count] = entry
            count += 1
            if count == Self.capacity {
                submit(count)
                count = 0
            }
        }
        if count > 0 { submit(count) }
    }

    private func submit(_ count: Int) {
        guard let ring else { return }
        let status = sidecar_send_ring_send(ring, fds, messages, UInt32(count), results)
        calls += 1
        for i in 0..<count {
            streams[i]._withUnsafeGuaranteedRef { $0.finishBatchedSend(results[i]) }
        }
        if status != 0 {
            sidecar_send_ring_free(ring)
            self.ring = nil
        }
    }
}

extension Stream {
    /// Describes the first `sendChains` chains of `wire` in `message` (its iovecs in
    /// `vectors`), TLS output encrypted first; false when a batched send is not for this
    /// stream now.
    func prepareBatchedSend(vectors: UnsafeMutablePointer<iovec>, message: UnsafeMutablePointer<msghdr>) -> Bool {
        guard isFlushDeferred, !isClosed, !connecting else { return false }
        // A failed encryption is met again by the plain flush that follows.
        if tls != nil, encryptOutput() != 0 { return false }
        let (count, bytes) = peekOutput(into: vectors)
        guard count > 0, bytes > 0 else { return false }
        message.initialize(to: msghdr())
        message.pointee.msg_iov = vectors
        message.pointee.msg_iovlen = count
        return true
    }

    /// Drains what the batched send wrote; `result` is bytes or -errno (see `sidecar_send_ring_send`).
    func finishBatchedSend(_ result: Int) {
        if result > 0 {
            bytesWritten &+= UInt64(result)
            wire.drain(result)
        } else if result == -Int(EIO) {
            batchedSendFailure = EIO
        }
        // Any other error, or a full socket: the plain flush that follows meets it again.
    }
}
