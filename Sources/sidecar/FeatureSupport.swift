import SidecarConfig

/// SPEC §3 keys whose features this build does not provide yet. Turning one on is an error,
/// never a silent no-op: an operator must not believe a protection is active when it is not.
/// A default that cannot be honoured would be a warning that says how to acknowledge it.
/// `check` and `run` report the same findings.
enum FeatureSupport {
    struct Finding: CustomStringConvertible {
        let path: String
        let message: String
        var description: String { "\(path): \(message)" }
    }

    static func unsupported(_ config: Config) -> (errors: [Finding], warnings: [Finding]) {
        var errors: [Finding] = []
        let warnings: [Finding] = []
        if case .redis = config.revocations.store {
            errors.append(Finding(path: "revocations.store", message: "\(config.revocations.store) is not available in this build; use memory (lost on restart) or file:/path"))
        }
        return (errors, warnings)
    }
}
