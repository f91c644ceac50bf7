import Foundation

extension Config {
    /// Reads and validates `path`, with `SIDECAR_*` variables of `environment` overriding its
    /// keys. Relative paths inside it (key files, `file:` secrets, unix sockets) are relative
    /// to the file's directory.
    ///
    /// Without a file (`path` nil) every setting comes from the environment and relative
    /// paths are relative to the working directory. Callers must ask for this explicitly: a
    /// file that went missing must not quietly drop its settings (empty access lists admit
    /// every Apple ID).
    public static func load(
        file path: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigErrors) -> Config {
        guard let path else {
            return try read(YAMLDocument(), file: "environment", hasFile: false, environment: environment,
                            baseDirectory: ".")
        }
        let bytes: [UInt8]
        switch FilePath.contents(path, limit: 4 << 20) {
        case .success(let read): bytes = read
        case .failure(let error):
            throw ConfigErrors([ConfigError(kind: .unresolvable, file: path, path: "", line: nil, column: nil,
                                            message: error.message)])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigErrors([ConfigError(kind: .invalidYAML, file: path, path: "", line: nil, column: nil,
                                            message: "not UTF-8 text")])
        }
        return try parse(yaml: text, file: path, environment: environment,
                         baseDirectory: FilePath.directory(of: path))
    }

    /// Validates configuration text; `file` is only used in messages. `SIDECAR_*` variables of
    /// `environment` override its keys.
    public static func parse(
        yaml: String,
        file: String = "sidecar.yaml",
        environment: [String: String] = [:],
        baseDirectory: String = "."
    ) throws(ConfigErrors) -> Config {
        let document: YAMLDocument
        do {
            document = try YAMLDocument(text: yaml, file: file)
        } catch {
            throw ConfigErrors([error])
        }
        return try read(document, file: file, hasFile: true, environment: environment, baseDirectory: baseDirectory)
    }

    /// Every key the schema knows, as dotted paths (`limits.max_body_bytes`), sorted.
    public static var keyPaths: [String] { schemaKeys.keys }

    /// The keys declared each in one place (`ConfigKey`): path, doc, default and variable,
    /// for the documentation to be checked against.
    public static let declaredKeys: [ConfigKeyDeclaration] = declaredSections.flatMap { ConfigKeyDeclaration.all(of: $0) }

    /// The sections whose keys are all declared, in the order of `sidecar.yaml`; an entry of
    /// `upstreams`, `rules` or `sites` is declared once, at `upstreams.<name>`, `rules` and
    /// `sites.<name>` (a site's `rules` are `rules` entries).
    static var declaredSections: [any ConfigSection.Type] {
        [
            TopLevel.self, TLSFiles.self, ACME.self, Endpoints.self, UpstreamTLS.self, HealthCheck.self, Routes.self,
            AppleIdentity.self, AppleOptions.self, AppleTransfer.self, Session.self, Access.self, Paths.self,
            UpstreamEntry.self, Rule.self, SiteEntry.self, DefaultSite.self, Headers.self, Assertion.self,
            Notifications.self, Revocations.self, Admin.self, Users.self, Log.self, Limits.self, Pages.self,
            Tracing.self,
        ]
    }

    /// The variable that sets `path`: `SIDECAR_` and the path upper-cased, `.` becoming `_`.
    public static func environmentVariable(for path: String) -> String { EnvironmentOverlay.variable(for: path) }

    /// Found by reading the schema over an empty document, so that the list can never
    /// disagree with what the schema reads.
    private static let schemaKeys: (keys: [String], sections: [String]) = {
        let reader = ConfigReader(file: "", document: YAMLDocument())
        var schema = ConfigSchema(reader: reader, file: "", environment: [:], baseDirectory: ".")
        _ = schema.read()
        return reader.keyPaths()
    }()

    private static func read(
        _ document: YAMLDocument, file: String, hasFile: Bool, environment: [String: String], baseDirectory: String
    ) throws(ConfigErrors) -> Config {
        let known = schemaKeys
        // An entry of a list or named map has no single variable (which rule would it set?).
        let settable = known.keys.filter { !$0.hasPrefix("rules.") && !$0.hasPrefix("upstreams.") }
        let overlay = EnvironmentOverlay(environment: environment, keys: settable)
        let reader = ConfigReader(file: file, document: document, hasFile: hasFile, overlay: overlay)
        var schema = ConfigSchema(reader: reader, file: file, environment: environment, baseDirectory: baseDirectory)
        let read = schema.read()
        let errors = reader.finish()
        guard errors.isEmpty, var config = read else {
            throw ConfigErrors(errors.isEmpty
                ? [ConfigError(kind: .invalidValue, file: file, path: "", line: nil, column: nil, message: "invalid configuration")]
                : errors)
        }
        config.environment = overlay.settings.values.sorted { $0.path < $1.path }.map { setting in
            EnvironmentSetting(
                path: setting.path, variable: setting.variable,
                value: reader.secretPaths.contains(setting.path) ? nil : setting.value,
                overridesLine: reader.overridden[setting.path]?.line)
        }
        config.warnings += EnvironmentOverlay.lookAlikes(
            environment: environment, keys: settable, sections: known.sections,
            referenced: overlay.references(in: document.root))
        return config
    }
}

/// A key set by a `SIDECAR_*` variable rather than the file.
public struct EnvironmentSetting: Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var variable: String
    /// The variable's text; nil when the key holds a secret (never shown).
    public var value: String?
    /// The line of the file's own value that the variable overrides, if the file sets the key too.
    public var overridesLine: Int?

    /// `session.lifetime = 7d (from SIDECAR_SESSION_LIFETIME)`.
    public var description: String {
        // Shown as given unless quoting is needed to see it: control characters, edge spaces.
        let shown = value.map { text in
            let plain = !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
                && text.first != " " && text.last != " "
            return plain ? text : quoted(text)
        } ?? "(set)"
        let over = overridesLine.map { ", overriding line \($0)" } ?? ""
        return "\(path) = \(shown) (from \(variable)\(over))"
    }
}
