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
