import Yams

/// Walks the YAML tree, collecting every error with its key path and position.
///
/// Keys are declared by being read: once the whole schema has been read, every key that no
/// one asked for is reported as unknown, with the closest known key as a suggestion.
final class ConfigReader {
    let file: String
    let document: YAMLDocument
    private(set) var errors: [ConfigError] = []
    private var sections: [Section] = []

    init(file: String, document: YAMLDocument) {
        self.file = file
        self.document = document
    }

    var root: Section {
        if let first = sections.first { return first }
        let root = Section(reader: self, path: "", node: document.root, fallback: .start)
        sections.append(root)
        return root
    }

    func report(_ kind: ConfigError.Kind, _ path: String, at location: Location?, _ message: String) {
        errors.append(ConfigError(kind: kind, file: file, path: path, line: location?.line,
                                  column: location?.column, message: message))
    }

    func report(_ error: ValueError, _ path: String, at location: Location?) {
        report(error.kind, path, at: location, error.message)
    }

    fileprivate func register(_ section: Section) { sections.append(section) }

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

/// One YAML mapping of the configuration (the root or a section like `limits`).
final class Section {
    private unowned let reader: ConfigReader
    let path: String
    /// The mapping's position, or where it would be (its parent's) when absent.
    let location: Location
    private var entries: [String: (key: Location, value: Node)] = [:]
    private var order: [String] = []
    fileprivate private(set) var readKeys: [String] = []
    /// Set when this mapping (or its parent) had the wrong type: its keys' absence is not news.
    private var isMalformed: Bool

    fileprivate init(reader: ConfigReader, path: String, node: Node?, fallback: Location, parentMalformed: Bool = false) {
        self.reader = reader
        self.path = path
        location = reader.document.location(node?.mark) ?? fallback
        isMalformed = parentMalformed
        guard let node, !Self.isNull(node) else { return }
        guard let mapping = node.mapping else {
            reader.report(.wrongType, path, at: location,
                          "expected a mapping of keys, found \(Self.describe(node))")
            isMalformed = true
            return
        }
        for (keyNode, value) in mapping {
            let keyLocation = reader.document.location(keyNode.mark) ?? location
            guard let raw = keyNode.scalar?.string else {
                reader.report(.wrongType, path, at: keyLocation, "keys must be plain strings, found \(Self.describe(keyNode))")
                continue
            }
            let key = reader.document.duplicateName(ofMarked: raw) ?? raw
            if let first = entries[key] {
                reader.report(.duplicateKey, Self.join(path, key), at: keyLocation,
                              "duplicate key \(quoted(key)) (first set at line \(first.key.line))")
                continue
            }
            entries[key] = (keyLocation, value)
            order.append(key)
        }
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    fileprivate var unreadKeys: [(String, Location)] {
        order.filter { !readKeys.contains($0) }.compactMap { key in entries[key].map { (key, $0.key) } }
    }

    // MARK: Reading

    /// Where `key`'s value is, or this section's position when it is absent.
    func location(of key: String) -> Location {
        entries[key].flatMap { reader.document.location($0.value.mark) } ?? location
    }

    /// Marks keys as known without reading them (their values are read conditionally).
    func declare(_ keys: String...) {
        for key in keys where !readKeys.contains(key) { readKeys.append(key) }
    }

    func contains(_ key: String) -> Bool {
        guard let value = entries[key]?.value else { return false }
        return !Self.isNull(value)
    }

    func section(_ key: String) -> Section {
        let section = Section(reader: reader, path: Self.join(path, key), node: node(key), fallback: location(of: key),
                              parentMalformed: isMalformed)
        reader.register(section)
        return section
    }

    func value<T>(_ key: String, default fallback: T, _ parse: (String) -> Result<T, ValueError>) -> T {
        optional(key, parse) ?? fallback
    }

    func required<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> T? {
        if node(key) == nil {
            if isMalformed { return nil }
            reader.report(.missingKey, Self.join(path, key), at: location, "missing required key \(quoted(key))")
            return nil
        }
        return optional(key, parse)
    }

    /// Reports a missing key that another key's value makes necessary.
    func requireMissing(_ key: String, because reason: String) {
        if isMalformed { return }
        reader.report(.missingKey, Self.join(path, key), at: location, "missing required key \(quoted(key)) (\(reason))")
    }

    func optional<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> T? {
        guard let node = node(key) else { return nil }
        return convert(node, path: Self.join(path, key), parse)
    }

    func bool(_ key: String, default fallback: Bool) -> Bool {
        value(key, default: fallback) { text in
            switch text {
            case "true", "True", "TRUE": return .success(true)
            case "false", "False", "FALSE": return .success(false)
            default: return .failure(ValueError("expected true or false, found \(quoted(text))"))
            }
        }
    }

    func list<T>(_ key: String, default fallback: [T], _ parse: (String) -> Result<T, ValueError>) -> [T] {
        optionalList(key, parse) ?? fallback
    }

    func optionalList<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> [T]? {
        guard let node = node(key) else { return nil }
        let keyPath = Self.join(path, key)
        guard let sequence = node.sequence else {
            reader.report(.wrongType, keyPath, at: reader.document.location(node.mark) ?? location,
                          "expected a list, found \(Self.describe(node))")
            return nil
        }
        return sequence.enumerated().compactMap { index, item in convert(item, path: "\(keyPath)[\(index)]", parse) }
    }

    /// The value node for `key`, nil when absent or null; marks the key as known.
    private func node(_ key: String) -> Node? {
        if !readKeys.contains(key) { readKeys.append(key) }
        guard let value = entries[key]?.value, !Self.isNull(value) else { return nil }
        return value
    }

    private func convert<T>(_ node: Node, path: String, _ parse: (String) -> Result<T, ValueError>) -> T? {
        let location = reader.document.location(node.mark) ?? location
        guard let scalar = node.scalar else {
            reader.report(.wrongType, path, at: location, "expected a single value, found \(Self.describe(node))")
            return nil
        }
        switch parse(scalar.string) {
        case .success(let value): return value
        case .failure(let error):
            reader.report(error, path, at: location)
            return nil
        }
    }

    private static func isNull(_ node: Node) -> Bool {
        guard let scalar = node.scalar, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    private static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let scalar): return "\(quoted(scalar.string))"
        case .alias: return "an alias"
        }
    }
}

/// "Did you mean …?" for unknown keys.
enum Suggestion {
    /// The closest sibling key by edit distance (ignoring case, `_` and `-`), else a key with
    /// the same name in another section (returned as its full path).
    static func closest(to key: String, siblings: [String], elsewhere: [String]) -> String? {
        let target = normalize(key)
        let limit = max(1, min(3, target.count / 3))
        let ranked = siblings.map { ($0, distance(target, normalize($0))) }.filter { $0.1 <= limit }
        if let best = ranked.min(by: { $0.1 < $1.1 }) { return best.0 }
        return elsewhere.first { path in
            normalize(String(path.split(separator: ".").last ?? "")) == target
        }
    }

    private static func normalize(_ text: String) -> [Character] {
        Array(text.lowercased().filter { $0 != "_" && $0 != "-" })
    }

    private static func distance(_ lhs: [Character], _ rhs: [Character]) -> Int {
        if lhs.isEmpty { return rhs.count }
        var previous = Array(0...rhs.count)
        for (i, left) in lhs.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: rhs.count)
            for (j, right) in rhs.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (left == right ? 0 : 1))
            }
            previous = current
        }
        return previous[rhs.count]
    }
}
