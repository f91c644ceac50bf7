import Yams

/// Walks the YAML tree, collecting every error with its key path and position.
///
/// Keys are declared by being read: once the whole schema has been read, every key that no
/// one asked for is reported as unknown, with the closest known key as a suggestion. Reading
/// the schema over an empty document therefore lists every key it knows (`keyPaths`).
///
/// Values from the environment are laid over the file's as each section is read, so the
/// schema reads them through the same parsers, and their errors name the variable.
final class ConfigReader {
    let file: String
    let document: YAMLDocument
    /// False when there is no file: positions mean nothing, and a missing key is set by its variable.
    let hasFile: Bool
    let overlay: EnvironmentOverlay
    private(set) var errors: [ConfigError] = []
    private var sections: [Section] = []
    /// Keys whose values turned out to be secrets (never shown).
    private(set) var secretPaths: Set<String> = []
    /// Keys set by the environment that the file sets too: where the file's value was.
    private(set) var overridden: [String: Location] = [:]

    init(file: String, document: YAMLDocument, hasFile: Bool = true, overlay: EnvironmentOverlay = EnvironmentOverlay()) {
        self.file = file
        self.document = document
        self.hasFile = hasFile
        self.overlay = overlay
    }

    var root: Section {
        if let first = sections.first { return first }
        let root = Section(reader: self, path: "", node: document.root, fallback: .start)
        sections.append(root)
        return root
    }

    func report(_ kind: ConfigError.Kind, _ path: String, at location: Location?, _ message: String) {
        if let variable = location?.variable {
            errors.append(ConfigError(kind: kind, file: file, path: path, line: nil, column: nil, message: message,
                                      variable: variable))
            return
        }
        let hint = !hasFile && kind == .missingKey ? "; set \(EnvironmentOverlay.variable(for: path))" : ""
        errors.append(ConfigError(kind: kind, file: file, path: path, line: hasFile ? location?.line : nil,
                                  column: hasFile ? location?.column : nil, message: message + hint))
    }

    func report(_ error: ValueError, _ path: String, at location: Location?) {
        report(error.kind, path, at: location, error.message)
    }

    /// Whether an error was reported for the key at `path` or an item of it (`path[2]`).
    func hasErrors(at path: String) -> Bool {
        errors.contains { $0.path == path || $0.path.hasPrefix(path + "[") }
    }

    func register(_ section: Section) { sections.append(section) }

    func noteSecret(_ path: String) {
        secretPaths.insert(path.firstIndex(of: "[").map { String(path[..<$0]) } ?? path)
    }

    func noteOverridden(_ path: String, fileValueAt location: Location) { overridden[path] = location }

    /// Every key read or declared so far, and every section: after reading the whole schema
    /// over an empty document, all the keys it knows.
    func keyPaths() -> (keys: [String], sections: [String]) {
        let sectionPaths = Set(sections.map(\.path))
        let read = Set(sections.flatMap { section in section.readKeys.map { Section.join(section.path, $0) } })
        return (read.subtracting(sectionPaths).sorted(), sectionPaths.subtracting([""]).sorted())
    }

    /// Reports unknown keys (call after the whole schema has been read) and sorts errors by position.
    func finish() -> [ConfigError] {
        let known = sections.flatMap { section in section.readKeys.map { Section.join(section.path, $0) } }
        for section in sections {
            for (key, location) in section.unreadKeys {
                let path = Section.join(section.path, key)
                let hint = Suggestion.closest(to: key, siblings: Array(section.readKeys), elsewhere: known)
                    .map { " (did you mean \(quoted($0))?)" } ?? ""
                report(.unknownKey, path, at: location, "unknown key \(quoted(key))\(hint)")
            }
        }
        return errors.enumerated().sorted { lhs, rhs in
            let left = (lhs.element.line ?? 0, lhs.element.column ?? 0, lhs.offset)
            let right = (rhs.element.line ?? 0, rhs.element.column ?? 0, rhs.offset)
            return left < right
        }.map(\.element)
    }
}
