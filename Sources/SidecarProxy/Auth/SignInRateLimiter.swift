/// `limits.sign_in_rate`: a token bucket per client address, in the form of the
/// generic cell rate algorithm — each address keeps one number, the time at which its bucket
/// would be full again (`fullAt`), so a bucket costs 32 bytes and no timer.
///
/// At most `capacity` addresses are tracked; past that, the least recently seen one is
/// forgotten (it starts again with a full bucket, the price of bounded memory against
/// clients with more addresses than that). Lookup, update and forgetting are O(1): a
/// dictionary from address to slot, and the slots in one array threaded as a list from most
/// to least recently seen. Nothing is allocated per request except a new address's slot (and
/// that only until the table is full: then the oldest slot is reused).
///
/// One per process (`AuthShared`), behind a lock taken only for sign-in requests, so with
/// several workers an address gets the configured rate in all, not per worker.
struct SignInRateLimiter {
    /// An IPv4 address (as IPv4-mapped IPv6) or an IPv6 /64 network: 128 bits.
    struct Address: Hashable {
        var high: UInt64
        var low: UInt64
    }

    enum Decision: Equatable {
        case allowed
        /// Over the rate: the whole seconds until one more request would be allowed.
        case limited(retryAfterSeconds: Int64)
    }

    static let defaultCapacity = 100_000

    private struct Slot {
        var address: Address
        /// When the bucket is full again (microseconds on the caller's monotonic clock).
        var fullAt: Int64
        var newer: Int32
        var older: Int32
    }

    let capacity: Int
    private var slots: [Slot] = []
    private var slotOf: [Address: Int32] = [:]
    private var newest: Int32 = -1
    private var oldest: Int32 = -1
    /// Requests refused since start.
    private(set) var limitedCount: UInt64 = 0

    init(capacity: Int = Self.defaultCapacity) {
        self.capacity = max(1, min(capacity, Int(Int32.max)))
    }

    var trackedAddresses: Int { slots.count }

    /// One request from `address` at `nowMicros`, with a token coming back every
    /// `intervalMicros` and at most `burst` held.
    mutating func admit(_ address: Address, nowMicros: Int64, intervalMicros: Int64, burst: Int) -> Decision {
        // A full bucket may be short of its last token by this much and still give one.
        let tolerance = intervalMicros &* Int64(max(0, burst - 1))
        guard let found = slotOf[address] else {
            remember(address, fullAt: nowMicros &+ intervalMicros)
            return .allowed
        }
        let slot = Int(found)
        moveToNewest(found)
        let fullAt = max(slots[slot].fullAt, nowMicros)
        let wait = fullAt - tolerance - nowMicros
        guard wait <= 0 else {
            limitedCount &+= 1
            return .limited(retryAfterSeconds: (wait + 999_999) / 1_000_000)
        }
        slots[slot].fullAt = fullAt + intervalMicros
        return .allowed
    }

    private mutating func remember(_ address: Address, fullAt: Int64) {
        let slot: Int32
        if slots.count < capacity {
            slot = Int32(slots.count)
            slots.append(Slot(address: address, fullAt: fullAt, newer: -1, older: -1))
        } else {
            slot = oldest
            unlink(slot)
            slotOf[slots[Int(slot)].address] = nil
            slots[Int(slot)].address = address
            slots[Int(slot)].fullAt = fullAt
        }
        slotOf[address] = slot
        linkAsNewest(slot)
    }

    private mutating func moveToNewest(_ slot: Int32) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    private mutating func unlink(_ slot: Int32) {
        let newer = slots[Int(slot)].newer, older = slots[Int(slot)].older
        if newer >= 0 { slots[Int(newer)].older = older } else { newest = older }
        if older >= 0 { slots[Int(older)].newer = newer } else { oldest = newer }
    }

    private mutating func linkAsNewest(_ slot: Int32) {
        slots[Int(slot)].newer = -1
        slots[Int(slot)].older = newest
        if newest >= 0 { slots[Int(newest)].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}
