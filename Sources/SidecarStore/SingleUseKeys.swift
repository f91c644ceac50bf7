/// What a single-use key belongs to; keys of different namespaces never collide.
///
/// A struct rather than an enum so a log written by a newer sidecar with one more
/// namespace still replays (the unknown namespace's keys are kept like any other).
/// Namespaces 0x80 and above are reserved: `0x80 | n` records the horizon of namespace `n`
/// (see `SingleUseKeyTable.horizon`).
public struct ClaimNamespace: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A login `state` whose callback already ran: a replayed form_post is refused.
    public static let loginState = ClaimNamespace(rawValue: 1)
    /// A sealed native nonce already used.
    public static let nativeNonce = ClaimNamespace(rawValue: 2)
    /// An Apple notification `jti` already handled.
    public static let notificationJTI = ClaimNamespace(rawValue: 3)

    static let horizonBit: UInt8 = 0x80

    /// The reserved namespace whose one record holds this namespace's horizon.
    var horizon: ClaimNamespace { ClaimNamespace(rawValue: rawValue | Self.horizonBit) }
    var isHorizon: Bool { rawValue & Self.horizonBit != 0 }
    /// For a horizon namespace, the namespace it belongs to.
    var horizonOwner: ClaimNamespace { ClaimNamespace(rawValue: rawValue & ~Self.horizonBit) }

    public var description: String {
        switch self {
        case .loginState: return "login_state"
        case .nativeNonce: return "native_nonce"
        case .notificationJTI: return "notification_jti"
        default: return "namespace_\(rawValue)"
        }
    }
}

/// The partitions of a memory or file store's single-use keys. Each has its own capacity, so
/// a flood of one kind — login states are the cheapest to make: two unauthenticated
/// requests — never evicts or blocks another.
public enum ClaimKind: Int, CaseIterable, Sendable {
    case loginState, nativeNonce, notificationJTI
    /// Namespaces this version does not know (from a log a newer sidecar wrote).
    case other

    init(_ namespace: ClaimNamespace) {
        switch namespace {
        case .loginState: self = .loginState
        case .nativeNonce: self = .nativeNonce
        case .notificationJTI: self = .notificationJTI
        default: self = .other
        }
    }

    /// The `kind` label of the store metrics.
    public var label: String {
        switch self {
        case .loginState: "login_state"
        case .nativeNonce: "native_nonce"
        case .notificationJTI: "notification_jti"
        case .other: "other"
        }
    }

    /// Login states forget their oldest keys behind a horizon: a login state's expiry is the
    /// same on every try (sealed in its cookie, 10 minutes after the login began), so "expires
    /// no later than the horizon" identifies exactly the states that may have been forgotten,
    /// and those are refused. Refusing instead would let a flood stop every web sign-in until
    /// its states expire. The other kinds refuse new keys when full: a nonce's claim expiry
    /// depends on when it is claimed, so no horizon could recognise a forgotten one, and each
    /// of their keys needs a token Apple signed, so a full table is no cheap flood.
    var whenFull: SingleUseKeyTable.WhenFull { self == .loginState ? .forgetOldest : .refuse }
}

/// The outcome of claiming a single-use key.
public enum ClaimResult: Sendable, Equatable {
    /// First use: the caller goes ahead.
    case claimed
    /// Used before and not yet expired: a replay, refuse it.
    case alreadyUsed
    /// The store cannot tell (Redis unreachable, a failed disk write, a full table, a key
    /// forgotten to make room): the caller must refuse too — 503 with this reason — since
    /// going ahead could allow a replay.
    case unavailable(String)
}

/// A namespaced single-use key.
struct ClaimKey: Hashable {
    var namespace: ClaimNamespace
    var key: Key128
}
