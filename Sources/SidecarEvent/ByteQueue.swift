import CEvent

/// A FIFO of bytes: libevent's `evbuffer`, a chain of malloc'd blocks, so that appending and
/// moving bytes between queues (`move(to:)`) never copy what is already queued.
///
/// A handle, not an owner: a copy names the same queue. Whoever calls `allocate()` calls
/// `deallocate()` once, when no copy is used any more (a `Stream` owns its `input` and
/// `output`). The members are inlinable so that a call costs what the libevent call does.
public struct ByteQueue {
    @usableFromInline let buffer: OpaquePointer

    @inlinable init(_ buffer: OpaquePointer) { self.buffer = buffer }

    /// A new, empty queue; nil when memory is short.
    @inlinable public static func allocate() -> ByteQueue? {
        evbuffer_new().map(ByteQueue.init)
    }

    @inlinable public func deallocate() { evbuffer_free(buffer) }

    /// Bytes queued.
    @inlinable public var count: Int { evbuffer_get_length(buffer) }

    @inlinable public var isEmpty: Bool { evbuffer_get_length(buffer) == 0 }

    // MARK: Appending

    /// Copies `count` bytes at `bytes` to the end; false when memory is short.
    @inlinable @discardableResult
    public func append(_ bytes: UnsafeRawPointer?, count: Int) -> Bool {
        evbuffer_add(buffer, bytes, count) == 0
    }

    @inlinable @discardableResult
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        evbuffer_add(buffer, bytes.baseAddress, bytes.count) == 0
    }

    @inlinable @discardableResult
    public func append(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { evbuffer_add(buffer, $0.baseAddress, $0.count) == 0 }
    }

    @inlinable @discardableResult
    public func append(_ text: StaticString) -> Bool {
        evbuffer_add(buffer, text.utf8Start, text.utf8CodeUnitCount) == 0
    }

    // MARK: Moving between queues

    /// Moves every queued byte to the end of `destination` (blocks change hands, no copy).
    @inlinable @discardableResult
    public func move(to destination: ByteQueue) -> Bool {
        evbuffer_add_buffer(destination.buffer, buffer) == 0
    }

    /// Moves the first `max` bytes (or all, if fewer are queued) to the end of
    /// `destination`; returns how many moved.
    @inlinable @discardableResult
    public func move(to destination: ByteQueue, max: Int) -> Int {
        Int(evbuffer_remove_buffer(buffer, destination.buffer, max))
    }

    // MARK: Reading

    /// The first `count` bytes made contiguous, valid until this queue next changes; nil when
    /// `count` is 0 or more than is queued, or memory is short. For parsers that return early
    /// from the middle of their work, and know the count already; otherwise prefer
    /// `withPrefix(max:_:)`.
    @inlinable public func unsafePrefix(_ count: Int) -> UnsafeRawBufferPointer? {
        guard let base = evbuffer_pullup(buffer, count) else { return nil }
        return UnsafeRawBufferPointer(start: base, count: count)
    }

    /// Runs `body` on the first `max` bytes (or all, if fewer are queued) made contiguous;
    /// nil, without running it, when the queue is empty or memory is short. `body` must not
    /// change this queue.
    @inlinable public func withPrefix<Result, Failure: Error>(
        max: Int, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        guard let prefix = unsafePrefix(Swift.min(max, count)) else { return nil }
        return try body(prefix)
    }

    /// Copies the first bytes into `destination` without removing them; returns how many.
    @inlinable public func copyPrefix(into destination: UnsafeMutableRawBufferPointer) -> Int {
        Swift.max(0, evbuffer_copyout(buffer, destination.baseAddress, destination.count))
    }

    /// Moves the first bytes into `destination`; returns how many.
    @inlinable public func remove(into destination: UnsafeMutableRawBufferPointer) -> Int {
        Swift.max(0, Int(evbuffer_remove(buffer, destination.baseAddress, destination.count)))
    }

    /// Every queued byte, removed.
    public func removeAll() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let taken = bytes.withUnsafeMutableBytes { remove(into: $0) }
        if taken < bytes.count { bytes.removeLast(bytes.count - taken) }
        return bytes
    }

    /// Discards the first `count` bytes (all, if fewer are queued).
    @inlinable public func drain(_ count: Int) { _ = evbuffer_drain(buffer, count) }

    // MARK: Writing in place

    /// Free space at the end, at least `count` contiguous bytes, to write into before
    /// `commit`ting it (one copy instead of composing elsewhere first); nil when memory is short.
    @inlinable public func reserve(_ count: Int) -> Reservation? {
        var vector = iovec()  // libevent's evbuffer_iovec is struct iovec on Linux
        guard evbuffer_reserve_space(buffer, count, &vector, 1) == 1, vector.iov_base != nil else { return nil }
        return Reservation(queue: self, vector: vector, count: count)
    }

    /// Space reserved at the end of a queue (`reserve`): nothing is queued until `commit`,
    /// and the queue must not change in between.
    public struct Reservation {
        @usableFromInline let queue: ByteQueue
        @usableFromInline var vector: iovec

        @inlinable init(queue: ByteQueue, vector: iovec, count: Int) {
            self.queue = queue
            self.vector = vector
            self.vector.iov_len = Swift.min(vector.iov_len, count)
        }

        /// Where to write, and how much: exactly what was reserved.
        @inlinable public var base: UnsafeMutableRawPointer { vector.iov_base! }  // checked by `reserve`
        @inlinable public var count: Int { vector.iov_len }

        /// Appends the first `written` bytes of the reserved space to the queue.
        @inlinable public mutating func commit(_ written: Int) -> Bool {
            vector.iov_len = written
            return evbuffer_commit_space(queue.buffer, &vector, 1) == 0
        }
    }
}
