/// The id of a queued notification forward: increasing in enqueue order, never reused
/// by one store file (the file store keeps the sequence across compactions).
public struct ForwardID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: ForwardID, b: ForwardID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "forward-\(rawValue)" }
}

/// A notification forward not yet acknowledged by the upstream.
public struct PendingForward: Sendable, Equatable {
    public var id: ForwardID
    /// The JSON to POST to `notifications.forward_to`, exactly as enqueued.
    public var payload: [UInt8]
    /// Unix seconds.
    public var enqueuedAt: Int64
    /// Delivery attempts recorded so far (`recordForwardAttempt`), kept across restarts so
    /// the back-off resumes where it was instead of hammering the upstream after a restart.
    public var attempts: UInt32
    /// Unix seconds of the last recorded attempt; nil before the first.
    public var lastAttemptAt: Int64?

    public init(id: ForwardID, payload: [UInt8], enqueuedAt: Int64, attempts: UInt32 = 0, lastAttemptAt: Int64? = nil) {
        self.id = id
        self.payload = payload
        self.enqueuedAt = enqueuedAt
        self.attempts = attempts
        self.lastAttemptAt = lastAttemptAt
    }
}

/// The undelivered forwards in memory (callers hold a lock). Bounded by count and bytes:
/// a full queue refuses new forwards with `StoreError.forwardQueueFull`, which the caller
/// logs (never lose one silently). Forwards never expire here; giving up on
/// one is the forwarder's decision, made by acknowledging it and logging why.
struct ForwardQueue {
    let maximumCount: Int
    let maximumBytes: Int
    let maximumPayloadBytes: Int
    private(set) var entries: [ForwardID: PendingForward] = [:]
    private(set) var payloadBytes = 0
    /// The id the next enqueue gets.
    private(set) var nextID: UInt64 = 1

    init(limits: StoreLimits) {
        maximumCount = max(1, limits.maximumPendingForwards)
        maximumBytes = max(1, limits.maximumPendingForwardBytes)
        maximumPayloadBytes = min(max(1, limits.maximumForwardPayloadBytes), LogRecord.maximumPayloadBytes)
    }

    var count: Int { entries.count }

    /// The id a new forward of `payloadCount` bytes gets, or why it cannot be queued.
    func admit(payloadCount: Int) throws(StoreError) -> ForwardID {
        guard payloadCount <= maximumPayloadBytes else {
            throw .invalidArgument("forward payload of \(payloadCount) bytes exceeds \(maximumPayloadBytes)")
        }
        guard entries.count < maximumCount, payloadBytes + payloadCount <= maximumBytes else {
            throw .forwardQueueFull(count: entries.count, bytes: payloadBytes)
        }
        return ForwardID(rawValue: nextID)
    }

    mutating func insert(_ forward: PendingForward) {
        if let previous = entries.updateValue(forward, forKey: forward.id) { payloadBytes -= previous.payload.count }
        payloadBytes += forward.payload.count
        advanceSequence(past: forward.id.rawValue)
    }

    /// Ids stay unique even for forwards acknowledged and compacted away.
    mutating func advanceSequence(past id: UInt64) {
        if id >= nextID { nextID = id &+ 1 }
    }

    @discardableResult
    mutating func remove(_ id: ForwardID) -> Bool {
        guard let removed = entries.removeValue(forKey: id) else { return false }
        payloadBytes -= removed.payload.count
        return true
    }

    @discardableResult
    mutating func recordAttempt(_ id: ForwardID, at time: Int64) -> Bool {
        guard entries[id] != nil else { return false }
        entries[id]!.attempts &+= 1
        entries[id]!.lastAttemptAt = time
        return true
    }

    /// Oldest first.
    func pending() -> [PendingForward] { entries.values.sorted { $0.id < $1.id } }
}
