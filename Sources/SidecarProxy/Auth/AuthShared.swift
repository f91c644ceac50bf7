import Glibc
import Synchronization

/// Sign-in state shared by every worker and kept across reloads: revocations and the
/// single-use values already spent. Created once per process.
public final class AuthShared: Sendable {
    let revocations = RevocationList()
    let usedStates = UsedLoginStates()
    let usedNonces = UsedLoginStates(lifetime: AuthShared.nativeNonceSeconds)

    /// How long a sealed native nonce (`GET {prefix}/native/nonce`) stays valid.
    static let nativeNonceSeconds: Int64 = 600

    public init() {}

    /// What must be single-use (SPEC §6), each kind in its own key space.
    enum SingleUse { case loginState, nativeNonce }

    /// Marks `digest` (a SHA-256 of the value) spent until `expiry`; false when it already
    /// was. The one place single-use checks go through, so the store behind it can change.
    func claimOnce(_ kind: SingleUse, _ digest: [UInt8], until expiry: Int64, now: Int64) -> Bool {
        switch kind {
        case .loginState: usedStates.markUsed(digest, until: expiry, now: now)
        case .nativeNonce: usedNonces.markUsed(digest, until: expiry, now: now)
        }
    }
}

/// Wall-clock Unix seconds (vDSO `time`, no syscall): what sealed expiries are compared to.
enum UnixTime {
    static func now() -> Int64 { Int64(time(nil)) }
}
