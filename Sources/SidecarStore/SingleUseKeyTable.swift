/// The single-use keys of one kind with their expiries, in memory (callers hold a lock).
///
/// Memory is bounded by `capacity`. Expired keys are swept away at most once a minute
/// (a pass over everything) or when the table is full and something has expired by then
/// (`earliestExpiry` says whether anything can have). When it is full of unexpired keys,
/// `whenFull` decides (see `ClaimKind.whenFull` for which kind does what):
/// - `.refuse`: the claim is refused (`.full`, 503 upstream) until keys expire. Nothing
///   used is ever forgotten early.
/// - `.forgetOldest`: the quarter of the keys closest to their expiry is forgotten and the
///   `horizon` rises to the latest expiry among them. A later claim of a key that expires
///   no later than the horizon is refused (`.forgotten`): it may be one of those forgotten,
///   so a replay still fails. Finding the quarter sorts the expiries, O(n log n) once per
///   n/4 claims, so a flood never makes each claim a full scan.
struct SingleUseKeyTable {
    enum WhenFull { case forgetOldest, refuse }

    enum Admission: Equatable {
        case fresh, alreadyUsed
        /// Expires no later than the horizon: it may have been used and forgotten.
        case forgotten
        /// Full of unexpired keys. With `.forgetOldest`, the horizon that frees room: the
        /// caller records it (durably, for the file store), then calls `forget(through:)`.
        case full(forgetThrough: Int64?)
    }

    static let sweepIntervalSeconds: Int64 = 60

    let capacity: Int
    let whenFull: WhenFull
    private(set) var entries: [ClaimKey: Int64] = [:]
    /// Keys expiring at or before this were forgotten to make room (`.min`: none were).
    private(set) var horizon: Int64 = .min
    /// No key expires before this (a lower bound; `.max` when empty).
    private var earliestExpiry: Int64 = .max
    private var nextSweepAt: Int64 = .min
    /// Claims refused or keys forgotten early because the table was full.
    private(set) var overflows: UInt64 = 0

    init(capacity: Int, whenFull: WhenFull) {
        self.capacity = max(4, capacity)
        self.whenFull = whenFull
    }

    var count: Int { entries.count }

    /// Whether `key` may be claimed until `expiresAt`; sweeps expired keys when due. A
    /// `.fresh` answer guarantees `insert` stays within the capacity.
    mutating func admit(_ key: ClaimKey, expiresAt: Int64, now: Int64) -> Admission {
        if let expiry = entries[key] {
            if expiry > now { return .alreadyUsed }
            entries[key] = nil
        }
        if isForgotten(expiresAt: expiresAt, now: now) { return .forgotten }
        if now >= nextSweepAt && now >= earliestExpiry { sweep(now: now) }
        guard entries.count >= capacity else { return .fresh }
        if now >= earliestExpiry { sweep(now: now) }
        guard entries.count >= capacity else { return .fresh }
        overflows &+= 1
        switch whenFull {
        case .refuse: return .full(forgetThrough: nil)
        case .forgetOldest: return .full(forgetThrough: quarterExpiry())
        }
    }

    /// Whether a key expiring at `expiresAt` may be one of those forgotten for room. An
    /// expired key is not (nothing remembers it anyway; its caller refuses it itself).
    func isForgotten(expiresAt: Int64, now: Int64) -> Bool { expiresAt > now && expiresAt <= horizon }

    /// Remembers `key` until `expiresAt` (after `admit` said `.fresh`, or at replay).
    mutating func insert(_ key: ClaimKey, expiresAt: Int64) {
        entries[key] = max(expiresAt, entries[key] ?? .min)
        earliestExpiry = min(earliestExpiry, expiresAt)
    }

    /// Forgets every key expiring at or before `horizon` and refuses such keys from now on.
    mutating func forget(through horizon: Int64) {
        guard horizon > self.horizon else { return }
        self.horizon = horizon
        guard earliestExpiry <= horizon else { return }
        entries = entries.filter { $0.value > horizon }
        earliestExpiry = entries.values.min() ?? .max
    }

    /// Drops every expired key.
    mutating func sweep(now: Int64) {
        entries = entries.filter { $0.value > now }
        earliestExpiry = entries.values.min() ?? .max
        nextSweepAt = now + Self.sweepIntervalSeconds
    }

    /// The expiry at or below which a quarter of the keys lie (ties go with them).
    private func quarterExpiry() -> Int64 {
        let quota = max(1, capacity / 4)
        return entries.values.sorted()[min(quota, entries.count) - 1]
    }
}

/// A memory or file store's single-use keys: one `SingleUseKeyTable` per `ClaimKind`, each
/// with `capacity` keys.
struct SingleUseKeySets {
    private(set) var tables: [SingleUseKeyTable]

    init(capacity: Int) {
        tables = ClaimKind.allCases.map { SingleUseKeyTable(capacity: capacity, whenFull: $0.whenFull) }
    }

    subscript(kind: ClaimKind) -> SingleUseKeyTable {
        get { tables[kind.rawValue] }
        // In place: a get-then-set would copy the table's dictionary on every claim.
        _modify { yield &tables[kind.rawValue] }
    }

    var count: Int { tables.reduce(0) { $0 + $1.count } }

    mutating func sweep(now: Int64) {
        for index in tables.indices { tables[index].sweep(now: now) }
    }

    /// A replayed claim record: a key, or a horizon (see `ClaimNamespace.horizon`). The
    /// horizon of a namespace this version does not know is kept as a plain key.
    mutating func apply(_ key: ClaimKey, expiresAt: Int64) {
        let owner = ClaimKind(key.namespace.horizonOwner)
        if key.namespace.isHorizon && owner != .other {
            self[owner].forget(through: expiresAt)
        } else {
            self[ClaimKind(key.namespace)].insert(key, expiresAt: expiresAt)
        }
    }

    /// The unexpired keys and the horizons still in force, as records for a compacted log.
    func liveRecords(now: Int64) -> [LogRecord] {
        var records: [LogRecord] = []
        records.reserveCapacity(count + tables.count)
        for table in tables {
            for (key, expiresAt) in table.entries where expiresAt > now {
                records.append(.claim(key, expiresAt: expiresAt))
            }
        }
        for kind in ClaimKind.allCases where self[kind].horizon > now {
            guard let namespace = kind.namespace else { continue }
            records.append(.claim(Self.horizonKey(namespace), expiresAt: self[kind].horizon))
        }
        return records
    }

    /// The record key of `namespace`'s horizon: kept until the horizon itself passes, after
    /// which every key it covers has expired anyway.
    static func horizonKey(_ namespace: ClaimNamespace) -> ClaimKey {
        ClaimKey(namespace: namespace.horizon, key: Key128(high: 0, low: 0))
    }
}

extension ClaimKind {
    /// The one namespace of a kind (`other` has many, and never a horizon).
    var namespace: ClaimNamespace? {
        switch self {
        case .loginState: .loginState
        case .nativeNonce: .nativeNonce
        case .notificationJTI: .notificationJTI
        case .other: nil
        }
    }
}
