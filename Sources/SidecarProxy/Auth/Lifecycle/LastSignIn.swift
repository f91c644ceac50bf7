import Logging
import SidecarStore

extension AuthSettings {
    /// Remembers a sign-in for `sidecar users show` (when, and `web` or `native:<bundle id>`),
    /// once the user has the answer: a store that cannot record it is logged, and the sign-in
    /// stands.
    func recordSignIn(_ subject: String, platform: String, atMs: Int64, logger: Logger) {
        shared.store.recordSignIn(subject, SignInRecord(atMs: atMs, platform: platform)) { result in
            if case .failure(let error) = result {
                logger.warning("last sign-in not recorded", metadata: ["sub": "\(subject)", "error": "\(error)"])
            }
        }
    }
}
