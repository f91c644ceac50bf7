import Yams

/// Configuration keys set by `SIDECAR_*` variables, laid over the file's values.
///
/// A key's variable is `SIDECAR_` and its path upper-cased, `.` becoming `_`:
/// `access.allowed_email_domains` → `SIDECAR_ACCESS_ALLOWED_EMAIL_DOMAINS`. As `_` also occurs
/// inside key names, a variable is never split into a path: it is looked up among the variable
/// names of the keys the schema knows. Any other `SIDECAR_*` variable is not a setting (it may
/// well be a secret that the file names as `env:SIDECAR_…`) and is left alone.
struct EnvironmentOverlay {
    static let prefix = "SIDECAR_"

    struct Setting {
        var path: String
        var variable: String
        var value: String
    }

    /// By key path.
    private(set) var settings: [String: Setting] = [:]
    /// By the path of the section holding the key, keyed by the key's own name.
    private var bySection: [String: [(key: String, setting: Setting)]] = [:]

    init() {}

    /// An empty variable counts as unset, as `${NAME}` in a compose file or a Kubernetes
    /// manifest gives an empty value for a name that is not defined.
    init(environment: [String: String], keys: [String]) {
        for path in keys {
            let variable = Self.variable(for: path)
            guard let value = environment[variable], !value.isEmpty else { continue }
            let setting = Setting(path: path, variable: variable, value: value)
            settings[path] = setting
            let (section, key) = Self.split(path)
            bySection[section, default: []].append((key, setting))
        }
    }

    static func variable(for path: String) -> String {
        prefix + String(path.uppercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
    }

    func settings(in section: String) -> [(key: String, setting: Setting)] { bySection[section] ?? [] }

    private static func split(_ path: String) -> (section: String, key: String) {
        guard let dot = path.lastIndex(of: ".") else { return ("", path) }
        return (String(path[..<dot]), String(path[path.index(after: dot)...]))
    }

    // MARK: Look-alikes

    /// `SIDECAR_*` variables that are not settings but look like a misspelt one (or name a
    /// whole section), unless the configuration refers to them as `env:NAME`: they are
    /// ignored, which is worth saying, as the operator probably meant a setting.
    static func lookAlikes(environment: [String: String], keys: [String], sections: [String],
                           referenced: Set<String>) -> [ConfigWarning] {
        let variables = Dictionary(keys.map { (variable(for: $0), $0) }, uniquingKeysWith: { first, _ in first })
        let sectionVariables = Dictionary(sections.map { (variable(for: $0), $0) }, uniquingKeysWith: { first, _ in first })
        var warnings: [ConfigWarning] = []
        for name in environment.keys.sorted()
        where name.hasPrefix(prefix) && variables[name] == nil && !referenced.contains(name) {
            if let section = sectionVariables[name] {
                let example = keys.first { $0.hasPrefix(section + ".") }.map { ", e.g. \(variable(for: $0))" } ?? ""
                warnings.append(ConfigWarning(
                    path: "", message: "\(name) is ignored: \(section) is a section, set its keys one by one\(example)"))
                continue
            }
            let target = Array(name.dropFirst(prefix.count))
            let limit = min(2, target.count / 4)
            guard limit > 0 else { continue }
            var near: (name: String, distance: Int)?
            for candidate in variables.keys {
                let distance = Suggestion.distance(target, Array(candidate.dropFirst(prefix.count)))
                guard distance <= limit else { continue }
                if let best = near, (best.distance, best.name) <= (distance, candidate) { continue }
                near = (candidate, distance)
            }
            if let suggestion = near?.name {
                warnings.append(ConfigWarning(
                    path: "", message: "\(name) is ignored: no key has that name (did you mean \(suggestion)?)"))
            }
        }
        return warnings
    }

    /// Names of variables that values in `node` (and the settings) refer to as `env:NAME`.
    func references(in node: Node?) -> Set<String> {
        var names: Set<String> = []
        func visit(_ text: String) {
            for item in text.split(separator: ",") {
                let trimmed = item.drop { $0 == " " || $0 == "\t" }
                if trimmed.hasPrefix("env:") { names.insert(String(trimmed.dropFirst(4))) }
            }
        }
        func walk(_ node: Node) {
            switch node {
            case .scalar(let scalar): visit(scalar.string)
            case .sequence(let sequence): sequence.forEach(walk)
            case .mapping(let mapping): mapping.forEach { walk($0.value) }
            case .alias: break
            }
        }
        node.map(walk)
        for setting in settings.values { visit(setting.value) }
        return names
    }
}
