import Glibc
import Synchronization

/// Sign-in state shared by every worker and kept across reloads: revocations and the login
/// states already used. Created once per process.
public final class AuthShared: Sendable {
    let revocations = RevocationList()
    let usedStates = UsedLoginStates()

    public init() {}
}

/// Wall-clock Unix seconds (vDSO `time`, no syscall): what sealed expiries are compared to.
enum UnixTime {
    static func now() -> Int64 { Int64(time(nil)) }
}

/// States whose callback already ran, so a replayed form_post is refused before Apple sees
/// its code again. Keyed by a hash of the state; entries live as long as a login state.
final class UsedLoginStates: Sendable {
    private let entries = Mutex<[[UInt8]: Int64]>([:])

    /// Records `key`; false when it was already recorded and has not expired.
    func markUsed(_ key: [UInt8], until expiry: Int64, now: Int64) -> Bool {
        entries.withLock { entries in
            if entries.count > 4096 { entries = entries.filter { $0.value > now } }
            if let existing = entries[key], existing > now { return false }
            entries[key] = expiry
            return true
        }
    }
}
