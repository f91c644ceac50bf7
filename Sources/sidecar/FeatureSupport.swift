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
        if config.tls != nil {
            errors.append(Finding(path: "tls", message: "serving HTTPS directly is not available in this build; terminate TLS in front (see Examples/nginx-in-front.conf)"))
        }
        if config.assertion.enabled {
            errors.append(Finding(path: "assertion.enabled", message: "the signed identity assertion is not available in this build"))
        }
        return (errors, warnings)
    }
}
