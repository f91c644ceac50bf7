import Yams

/// One YAML mapping of the configuration (the root or a section like `limits`).
final class Section {
    private unowned let reader: ConfigReader
    let path: String
    /// The mapping's position, or where it would be (its parent's) when absent.
    let location: Location
    private var entries: [String: Entry] = [:]
    private var order: [String] = []
    private(set) var readKeys: [String] = []
    /// Set when this mapping (or its parent) had the wrong type: its keys' absence is not news.
    private var isMalformed: Bool

    private struct Entry {
        var key: Location
        var value: Node
        /// The variable that set the value (a scalar, even for a list), nil for the file's.
        var variable: String?
    }

    init(reader: ConfigReader, path: String, node: Node?, fallback: Location, parentMalformed: Bool = false) {
        self.reader = reader
        self.path = path
        location = reader.document.location(node?.mark) ?? fallback
        isMalformed = parentMalformed
        readMapping(node)
        for (key, setting) in reader.overlay.settings(in: path) {
            let here = Location.environment(setting.variable)
            if let fileEntry = entries[key] {
                reader.noteOverridden(setting.path, fileValueAt: valueLocation(fileEntry))
            } else {
                order.append(key)
            }
            entries[key] = Entry(key: here, value: .scalar(Node.Scalar(setting.value)), variable: setting.variable)
        }
    }

    private func readMapping(_ node: Node?) {
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
            entries[key] = Entry(key: keyLocation, value: value)
            order.append(key)
        }
    }

    static func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    var unreadKeys: [(String, Location)] {
        order.filter { !readKeys.contains($0) }.compactMap { key in entries[key].map { (key, $0.key) } }
    }

    // MARK: Reading

    /// Where `key`'s value is, or this section's position when it is absent.
    func location(of key: String) -> Location {
        entries[key].map(valueLocation) ?? location
    }

    private func valueLocation(_ entry: Entry) -> Location {
        entry.variable.map(Location.environment) ?? reader.document.location(entry.value.mark) ?? location
    }

    /// Marks keys as known without reading them (their values are read conditionally).
    func declare(_ keys: String...) {
        for key in keys where !readKeys.contains(key) { readKeys.append(key) }
    }

    /// Whether `key` is set (not null); asking declares it, as its value is read when set.
    func contains(_ key: String) -> Bool {
        if !readKeys.contains(key) { readKeys.append(key) }
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

    /// A required key that takes one value or a list of them (`apple.client_id`).
    func requiredOneOrMore<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> [T]? {
        guard let node = node(key), node.sequence != nil || entries[key]?.variable != nil else {
            return required(key, parse).map { [$0] }
        }
        guard let values = optionalList(key, parse), !values.isEmpty else {
            reader.report(.invalidValue, Self.join(path, key), at: location(of: key), "an empty list names no value")
            return nil
        }
        return values
    }

    /// The mappings of a list of mappings (`rules`), each a section named `key[index]`.
    func sections(inList key: String) -> [Section] {
        guard let node = node(key) else { return [] }
        guard let sequence = node.sequence else {
            reader.report(.wrongType, Self.join(path, key), at: reader.document.location(node.mark) ?? location,
                          "expected a list, found \(Self.describe(node))")
            return []
        }
        return sequence.enumerated().map { index, item in
            let section = Section(reader: reader, path: "\(Self.join(path, key))[\(index)]", node: item,
                                  fallback: location(of: key), parentMalformed: isMalformed)
            reader.register(section)
            return section
        }
    }

    /// The entries of a mapping whose keys are names the operator chooses (`upstreams`): each
    /// name with its value read as a section `key.name`.
    func sections(inNamedMap key: String) -> [(name: String, at: Location, section: Section)] {
        guard let node = node(key) else { return [] }
        guard let mapping = node.mapping else {
            reader.report(.wrongType, Self.join(path, key), at: reader.document.location(node.mark) ?? location,
                          "expected a mapping of names, found \(Self.describe(node))")
            return []
        }
        var seen: Set<String> = []
        var result: [(name: String, at: Location, section: Section)] = []
        for (keyNode, value) in mapping {
            let at = reader.document.location(keyNode.mark) ?? location
            guard let raw = keyNode.scalar?.string else { continue }
            let name = reader.document.duplicateName(ofMarked: raw) ?? raw
            let itemPath = Self.join(Self.join(path, key), name)
            guard seen.insert(name).inserted else {
                reader.report(.duplicateKey, itemPath, at: at, "duplicate name \(quoted(name))")
                continue
            }
            let section = Section(reader: reader, path: itemPath, node: value, fallback: at, parentMalformed: isMalformed)
            reader.register(section)
            result.append((name, at, section))
        }
        return result
    }

    /// The entries of a mapping of names the operator chooses to single values
    /// (`rules[].set_headers`): each name with its value checked by `parse` (nil for one it
    /// refused, reported at the value), where the name is.
    func values<T>(
        inNamedMap key: String, _ parse: (String) -> Result<T, ValueError>
    ) -> [(name: String, at: Location, value: T?)] {
        guard let node = node(key) else { return [] }
        guard let mapping = node.mapping else {
            reader.report(.wrongType, Self.join(path, key), at: reader.document.location(node.mark) ?? location,
                          "expected a mapping of names to values, found \(Self.describe(node))")
            return []
        }
        return mapping.compactMap { keyNode, value in
            let at = reader.document.location(keyNode.mark) ?? location
            guard let raw = keyNode.scalar?.string else {
                reader.report(.wrongType, Self.join(path, key), at: at, "names must be plain strings, found \(Self.describe(keyNode))")
                return nil
            }
            let name = reader.document.duplicateName(ofMarked: raw) ?? raw
            return (name, at, convert(value, path: Self.join(Self.join(path, key), name), parse))
        }
    }

    /// A section with nothing in it, standing for each entry of a list or named map: reading
    /// it declares the keys an entry may have (so they are listed among the known keys)
    /// without reporting any as missing.
    func entryTemplate(_ key: String) -> Section {
        let section = Section(reader: reader, path: Self.join(path, key), node: nil, fallback: location,
                              parentMalformed: true)
        reader.register(section)
        return section
    }

    /// Reports an error at `path` (this section's, a key's or an item's) that only a rule
    /// between values can see (two servers of one upstream that differ).
    func report(_ kind: ConfigError.Kind, _ path: String, at location: Location, _ message: String) {
        reader.report(kind, path, at: location, message)
    }

    /// Whether an error was reported for the key at `path` or an item of it.
    func hasErrors(at path: String) -> Bool { reader.hasErrors(at: path) }

    /// Reports a missing key that another key's value makes necessary.
    func requireMissing(_ key: String, because reason: String) {
        if isMalformed { return }
        reader.report(.missingKey, Self.join(path, key), at: location, "missing required key \(quoted(key)) (\(reason))")
    }

    func optional<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> T? {
        guard let node = node(key) else { return nil }
        return convert(node, path: Self.join(path, key), variable: entries[key]?.variable, parse)
    }

    func bool(_ key: String, default fallback: Bool) -> Bool {
        value(key, default: fallback, Parse.bool)
    }

    func list<T>(_ key: String, default fallback: [T], _ parse: (String) -> Result<T, ValueError>) -> [T] {
        optionalList(key, parse) ?? fallback
    }

    func optionalList<T>(_ key: String, _ parse: (String) -> Result<T, ValueError>) -> [T]? {
        guard let node = node(key) else { return nil }
        let keyPath = Self.join(path, key)
        if let variable = entries[key]?.variable, let text = node.scalar?.string {
            return commaSeparated(text).enumerated().compactMap { index, item in
                let itemPath = "\(keyPath)[\(index)]"
                guard !item.isEmpty else {
                    reader.report(.invalidValue, itemPath, at: .environment(variable),
                                  "empty item in a comma-separated list")
                    return nil
                }
                return check(item, path: itemPath, at: .environment(variable), variable: variable, parse)
            }
        }
        guard let sequence = node.sequence else {
            reader.report(.wrongType, keyPath, at: reader.document.location(node.mark) ?? location,
                          "expected a list, found \(Self.describe(node))")
            return nil
        }
        return sequence.enumerated().compactMap { index, item in convert(item, path: "\(keyPath)[\(index)]", parse) }
    }

    /// Whether `key` holds a list (rather than one value).
    func isSequence(_ key: String) -> Bool { node(key)?.sequence != nil }

    /// The value node for `key`, nil when absent or null; marks the key as known.
    private func node(_ key: String) -> Node? {
        if !readKeys.contains(key) { readKeys.append(key) }
        guard let value = entries[key]?.value, !Self.isNull(value) else { return nil }
        return value
    }

    private func convert<T>(_ node: Node, path: String, variable: String? = nil,
                            _ parse: (String) -> Result<T, ValueError>) -> T? {
        let location = variable.map(Location.environment) ?? reader.document.location(node.mark) ?? location
        guard let scalar = node.scalar else {
            reader.report(.wrongType, path, at: location, "expected a single value, found \(Self.describe(node))")
            return nil
        }
        return check(scalar.string, path: path, at: location, variable: variable, parse)
    }

    private func check<T>(_ text: String, path: String, at location: Location, variable: String?,
                          _ parse: (String) -> Result<T, ValueError>) -> T? {
        switch parse(text) {
        case .success(let value):
            guard let secret = value as? Secret else { return value }
            reader.noteSecret(path)
            // The value of a variable is no more "inline" than an env:NAME reference is.
            if let variable, secret.source == "inline",
               let relabelled = Secret(bytes: secret.bytes, source: "env:\(variable)") as? T {
                return relabelled
            }
            return value
        case .failure(let error):
            reader.report(error, path, at: location)
            return nil
        }
    }

    /// `a, b,c` → `["a", "b", "c"]`: items trimmed of spaces and tabs, empty ones kept (to be refused).
    private func commaSeparated(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { item in
            let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
            guard let first = item.firstIndex(where: { !isBlank($0) }),
                  let last = item.lastIndex(where: { !isBlank($0) }) else { return "" }
            return String(item[first...last])
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
