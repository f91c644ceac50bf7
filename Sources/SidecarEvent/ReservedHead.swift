import SidecarHTTP

/// Space reserved at the end of a byte queue for a head composed in place: `out` writes into
/// it (at most the `bound` reserved), `commit` appends what was written. One copy, no
/// intermediate array — and no closure, whose captured arrays would each be retained.
public struct ReservedHead {
    @usableFromInline var reservation: ByteQueue.Reservation
    public var out: HeadBuffer

    /// Nil if `bound` contiguous bytes could not be allocated.
    @inlinable public init?(in queue: ByteQueue, bound: Int) {
        guard let reservation = queue.reserve(bound) else { return nil }
        self.reservation = reservation
        out = HeadBuffer(reservation.base, capacity: reservation.count)
    }

    /// Appends the written bytes to the queue the space was reserved in.
    @inlinable public mutating func commit() -> Bool { reservation.commit(out.count) }
}
