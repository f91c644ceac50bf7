import Glibc
import SidecarEvent
import SidecarStore
import Synchronization

/// Sign-in state shared by every worker and kept across reloads: the store
/// (revocations, single-use values, notification forwards). Created once per process; a
/// reload keeps it, so nothing it holds is lost to a SIGHUP.
public final class AuthShared: Sendable {
    public let store: any StoreBackend

    /// How long a sealed native nonce (`GET {prefix}/native/nonce`) stays valid.
    static let nativeNonceSeconds: Int64 = 600

    /// Rung when a notification forward is queued, so the forwarder (on one worker's loop)
    /// delivers it at once; nil only if no eventfd could be made (it then polls).
    let forwardDoorbell: WakeupChannel?

    /// `session.revalidate`: checks in flight and their outcomes, across workers.
    let revalidations = RevalidationTable()

    /// The assertion keys across reloads: current and previous.
    let assertionKeys: AssertionKeyRing

    /// `limits.sign_in_rate`'s buckets, one set for every worker (and kept across reloads),
    /// so the rate holds per address whatever worker a connection lands on.
    let signInLimiter = Mutex(SignInRateLimiter())

    /// `writesAssertionKeys`: create a configured `assertion.private_key_file` that does not
    /// exist yet (`run`); without it such a key lives in memory only (`check`, tests).
    public init(store: any StoreBackend, writesAssertionKeys: Bool = false) {
        self.store = store
        forwardDoorbell = try? WakeupChannel()
        assertionKeys = AssertionKeyRing(writesKeyFiles: writesAssertionKeys)
    }

    /// A per-process memory store (lost on restart): `sidecar check`, the demo, tests.
    public convenience init() { self.init(store: MemoryStore()) }

    /// What must be single-use, each kind in its own key space.
    enum SingleUse {
        case loginState, nativeNonce, notification

        var namespace: ClaimNamespace {
            switch self {
            case .loginState: .loginState
            case .nativeNonce: .nativeNonce
            case .notification: .notificationJTI
            }
        }
    }

    /// Spends `key` (a digest of the value) until `expiry`. The one place single-use checks go
    /// through. The answer may come later (a networked store): callers continue in
    /// `completion`, which runs on the calling thread.
    func claimOnce(_ kind: SingleUse, _ key: [UInt8], until expiry: Int64, completion: @escaping (ClaimResult) -> Void) {
        store.claim(kind.namespace, key: key, expiresAt: expiry, completion: completion)
    }
}

/// Wall-clock Unix seconds (vDSO `time`, no syscall): what sealed expiries are compared to.
enum UnixTime {
    static func now() -> Int64 { Int64(time(nil)) }

    /// Wall-clock Unix milliseconds (vDSO `clock_gettime`): a session's issue time, and the
    /// unit of Apple's `event_time` and of subject cutoffs.
    static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
