/// One problem found in a configuration file, located by key path, line and column.
///
/// `description` reads `sidecar.yaml:12:3: limits.header_timeout: invalid duration "10x" (…)`,
/// or for a value from the environment
/// `environment SIDECAR_LIMITS_HEADER_TIMEOUT: limits.header_timeout: invalid duration "10x" (…)`.
/// Messages never contain secret values, nor a URL's `user:password@` (`Userinfo`).
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The file is not well-formed YAML (or cannot be read at all).
        case invalidYAML
        case unknownKey
        case duplicateKey
        case missingKey
        /// E.g. a list where a string belongs.
        case wrongType
        case invalidValue
        /// An `env:`/`file:` secret or a key file that cannot be resolved.
        case unresolvable
        /// Keys that are each fine but contradict one another.
        case conflict
    }

    public var kind: Kind
    public var file: String
    /// Dotted key path, e.g. `limits.header_timeout` or `session.secrets[1]`; empty for the document.
    public var path: String
    public var line: Int?
    public var column: Int?
    public var message: String
    /// The `SIDECAR_*` variable that set the value, when it did not come from the file.
    public var variable: String?

    public init(kind: Kind, file: String, path: String, line: Int?, column: Int?, message: String,
                variable: String? = nil) {
        self.kind = kind
        self.file = file
        self.path = path
        self.line = line
        self.column = column
        self.message = Userinfo.redacted(message)
        self.variable = variable
    }

    public var description: String {
        var text = variable.map { "environment \($0)" } ?? file
        if variable == nil, let line {
            text += ":\(line)"
            if let column { text += ":\(column)" }
        }
        text += ": "
        if !path.isEmpty { text += "\(path): " }
        return text + Userinfo.redacted(message)
    }
}

/// Every problem found while loading a configuration, in file order.
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(_ errors: [ConfigError]) { self.errors = errors }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}

/// A configuration that loads but is probably not what the operator wants.
public struct ConfigWarning: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var message: String
    /// Where the key is in the file, for warnings about one entry of a list (`rules[2]`).
    public var line: Int? = nil
    public var column: Int? = nil

    public init(path: String, message: String, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.message = Userinfo.redacted(message)
        self.line = line
        self.column = column
    }

    public var description: String {
        let message = Userinfo.redacted(message)
        return path.isEmpty ? message : "\(path): \(message)"
    }

    /// `sidecar.yaml:14:5: warning: rules[2]: …` (without a position: `sidecar.yaml: warning: …`).
    public func line(file: String) -> String {
        var place = file
        if let line {
            place += ":\(line)"
            if let column { place += ":\(column)" }
        }
        return "\(place): warning: \(description)"
    }
}
