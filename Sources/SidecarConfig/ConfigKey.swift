/// One key of `sidecar.yaml`, declared once, in the section's own type beside the field it
/// lands in: the field's name and type are the typed value, its initial value the default; the
/// declaration gives the key's name, its one-line doc (the comment `sidecar.yaml` carries
/// beside it, which `ConfigurationDocTests` holds to it) and its parser. Its path is the
/// section's path and its name; its variable follows from the path (`EnvironmentOverlay`).
///
/// The schema walks a section's declarations (`Section.read(_:context:)`), so a key is known,
/// read, defaulted, settable from the environment and documented from this one place.
struct ConfigKey<Root>: Sendable {
    let name: String
    let doc: String
    /// The file (or a variable) must set it: its field's initial value is no default.
    var isRequired = false
    /// Reads the key's value from `section` into `root`, whose current value is the default.
    let read: @Sendable (Section, inout Root, ParseContext) -> Void
    /// The value of the key in `root` as the documentation shows a default.
    let shown: @Sendable (Root) -> String
    /// `text` as `sidecar.yaml` writes it, parsed and shown the same way; nil: refused.
    let parsedShown: @Sendable (String, ParseContext) -> String?

    /// A single value; absent, the field keeps its initial value.
    static func value<Value: Sendable>(
        _ field: WritableKeyPath<Root, Value> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String, ParseContext) -> Result<Value, ValueError>
    ) -> ConfigKey {
        ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                root[keyPath: field] = section.value(name, default: root[keyPath: field]) { parse($0, context) }
            },
            shown: { root in String(describing: root[keyPath: field]) },
            parsedShown: { text, context in (try? parse(text, context).get()).map { String(describing: $0) } })
    }

    static func value<Value: Sendable>(
        _ field: WritableKeyPath<Root, Value> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String) -> Result<Value, ValueError>
    ) -> ConfigKey {
        value(field, name, doc) { text, _ in parse(text) }
    }

    /// An optional key without a default: absent, the field stays nil.
    static func optional<Value: Sendable>(
        _ field: WritableKeyPath<Root, Value?> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String, ParseContext) -> Result<Value, ValueError>
    ) -> ConfigKey {
        ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                if let value = section.optional(name, { parse($0, context) }) { root[keyPath: field] = value }
            },
            shown: { root in root[keyPath: field].map { String(describing: $0) } ?? "" },
            parsedShown: { text, context in (try? parse(text, context).get()).map { String(describing: $0) } })
    }

    static func bool(_ field: WritableKeyPath<Root, Bool> & Sendable, _ name: String, _ doc: String) -> ConfigKey {
        value(field, name, doc, Parse.bool)
    }

    /// A single value the file (or a variable) must set; absent, it is reported missing.
    static func required<Value: Sendable>(
        _ field: WritableKeyPath<Root, Value?> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String, ParseContext) -> Result<Value, ValueError>
    ) -> ConfigKey {
        var key = ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                if let value = section.required(name, { parse($0, context) }) { root[keyPath: field] = value }
            },
            shown: { _ in "" },
            parsedShown: { text, context in (try? parse(text, context).get()).map { String(describing: $0) } })
        key.isRequired = true
        return key
    }

    /// A required value whose field holds a stand-in until it is read (`rules[].path`).
    static func requiredValue<Value: Sendable>(
        _ field: WritableKeyPath<Root, Value> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String) -> Result<Value, ValueError>
    ) -> ConfigKey {
        var key = ConfigKey(
            name: name, doc: doc,
            read: { section, root, _ in
                if let value = section.required(name, parse) { root[keyPath: field] = value }
            },
            shown: { _ in "" },
            parsedShown: { text, _ in (try? parse(text).get()).map { String(describing: $0) } })
        key.isRequired = true
        return key
    }

    /// A required key that takes one value or a list of them (`apple.client_id`).
    static func oneOrMore<Element: Sendable>(
        _ field: WritableKeyPath<Root, [Element]> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String) -> Result<Element, ValueError>
    ) -> ConfigKey {
        var key = ConfigKey(
            name: name, doc: doc,
            read: { section, root, _ in
                if let values = section.requiredOneOrMore(name, parse) { root[keyPath: field] = values }
            },
            shown: { _ in "" },
            parsedShown: { _, _ in nil })
        key.isRequired = true
        return key
    }

    /// This key, shown in `sidecar.yaml` with a value though it has no default: one of two
    /// keys of which the file must set one (`apple.private_key_file`, `apple.private_key`).
    var requiredWithAlternative: ConfigKey {
        var key = self
        key.isRequired = true
        return key
    }

    /// A list (`[a, b]` in the file, `a,b` in a variable); each item parsed on its own.
    static func list<Element: Sendable>(
        _ field: WritableKeyPath<Root, [Element]> & Sendable, _ name: String, _ doc: String,
        _ parse: @escaping @Sendable (String) -> Result<Element, ValueError>
    ) -> ConfigKey {
        ConfigKey(
            name: name, doc: doc,
            read: { section, root, _ in root[keyPath: field] = section.list(name, default: root[keyPath: field], parse) },
            shown: { root in Self.flowList(root[keyPath: field].map { String(describing: $0) }) },
            parsedShown: { text, _ in
                guard text.hasPrefix("["), text.hasSuffix("]") else { return nil }
                let inner = text.dropFirst().dropLast().split(separator: ",").map { String($0).trimmed }
                let items = inner.map { (try? parse($0).get()).map { String(describing: $0) } }
                return items.contains { $0 == nil } ? nil : Self.flowList(items.compactMap { $0 })
            })
    }

    /// A list the file must set; absent, it is reported missing, `missing` saying what to set.
    static func required<Element: Sendable>(
        _ field: WritableKeyPath<Root, [Element]> & Sendable, _ name: String, _ doc: String, missing: String,
        _ parse: @escaping @Sendable (String, ParseContext) -> Result<Element, ValueError>
    ) -> ConfigKey {
        var key = ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                guard section.contains(name) else { return section.requireMissing(name, because: missing) }
                if let items = section.optionalList(name, { parse($0, context) }) { root[keyPath: field] = items }
            },
            shown: { _ in "" },
            parsedShown: { _, _ in nil })
        key.isRequired = true
        return key
    }

    private static func flowList(_ items: [String]) -> String { "[" + items.joined(separator: ", ") + "]" }
}

/// What a parser may need besides the text: where relative paths start, the variables
/// `env:NAME` reads, and what the sections read before it decided.
struct ParseContext: Sendable {
    var baseDirectory: String
    var environment: [String: String]
    /// Once read: what a cookie's domain must cover (`session.domain`).
    var publicURL: HTTPURL?
    /// Once read: the names a rule may route to (`rules[].upstream`).
    var upstreamNames: [String] = []
    /// Once read: the identity headers' names, configured and default, which no rule may set.
    var identityHeaders: [String] = []
    /// Once read: the sites that loaded (`default_site` names one).
    var siteNames: [String] = []
}

/// A mapping of `sidecar.yaml` whose keys are all declared (`ConfigKey`): made with every
/// default by `init()`, then read key by key.
protocol ConfigSection {
    init()
    /// The section's key path (`limits`).
    static var path: String { get }
    static var keys: [ConfigKey<Self>] { get }
}

extension Section {
    /// Every declared key of `type`, read over its defaults.
    func read<S: ConfigSection>(_ type: S.Type, context: ParseContext) -> S {
        read(type, over: S(), context: context)
    }

    /// Every declared key of `type` but `skipped`, read over `initial` (an entry of a map
    /// whose unset keys take the top-level values); a skipped key is read, if at all, by
    /// `read(_:into:context:)` once the rules between keys allow it (`apple`'s two keys).
    func read<S: ConfigSection>(
        _ type: S.Type, over initial: S, context: ParseContext, skipping skipped: Set<String> = []
    ) -> S {
        var value = initial
        for key in S.keys where !skipped.contains(key.name) { key.read(self, &value, context) }
        return value
    }

    /// The declared key `name` of `S`, read into `value`.
    func read<S: ConfigSection>(_ name: String, into value: inout S, context: ParseContext) {
        for key in S.keys where key.name == name { key.read(self, &value, context) }
    }
}

/// A declared key as the documentation check sees it.
public struct ConfigKeyDeclaration: Sendable {
    /// `limits.max_streams`.
    public let path: String
    /// What `sidecar.yaml` says beside the key.
    public let doc: String
    /// The `SIDECAR_*` variable that sets it.
    public var variable: String { EnvironmentOverlay.variable(for: path) }
    /// The default as text (`100`, `1m`, `[]`; "" for an optional key without one).
    public let defaultShown: String
    /// The file (or a variable) must set it; it has no default.
    public let isRequired: Bool
    private let parsedShown: @Sendable (String, ParseContext) -> String?

    /// Whether `text`, as written in a file, means the key's default (nil: the key refuses it).
    public func isDefault(_ text: String) -> Bool? {
        parsedShown(text, ParseContext(baseDirectory: ".", environment: [:])).map { $0 == defaultShown }
    }

    static func all<S: ConfigSection>(of type: S.Type) -> [ConfigKeyDeclaration] {
        let defaults = S()
        return S.keys.map { key in
            ConfigKeyDeclaration(path: Section.join(S.path, key.name), doc: key.doc, defaultShown: key.shown(defaults),
                                 isRequired: key.isRequired, parsedShown: key.parsedShown)
        }
    }
}

extension String {
    /// A flow list's item as YAML reads it: without the spaces around it and its quotes.
    fileprivate var trimmed: String {
        var text = Substring(self)
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        if text.count >= 2, let first = text.first, first == "\"" || first == "'", text.last == first {
            text = text.dropFirst().dropLast()
        }
        return String(text)
    }
}
