import Foundation
import XCTest
import SidecarConfig

/// `Docs/configuration.md` is the configuration reference an operator reads: it must show every
/// key the schema knows and no key it does not, and its annotated file must be the repository's
/// `sidecar.yaml` (whose values `ExampleConfigTests` checks against the real defaults), where
/// each declared key (`Config.declaredKeys`) carries its declared doc and default.
final class ConfigurationDocTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func read(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    func testEveryKeyTheSchemaKnowsIsInTheReference() throws {
        let shown = Set(try Self.yamlBlocks(read("Docs/configuration.md")).flatMap { Self.keyPaths(in: $0).keys })
        XCTAssertFalse(Config.keyPaths.isEmpty)
        XCTAssertEqual(Set(Config.keyPaths).subtracting(shown).sorted(), [],
                       "keys of the schema that no yaml block of Docs/configuration.md shows")
    }

    /// The README's minimal configuration is checked too: a misspelt key there would be copied.
    func testEveryKeyTheDocumentsShowIsKnown() throws {
        let known = Set(Config.keyPaths)
        let sections = Set(known.flatMap { path in
            path.indices.filter { path[$0] == "." }.map { String(path[..<$0]) }
        })
        for document in ["Docs/configuration.md", "README.md"] {
            let blocks = try Self.yamlBlocks(read(document))
            XCTAssertFalse(blocks.isEmpty, "\(document) has no yaml block")
            for block in blocks {
                let found = Self.keyPaths(in: block)
                XCTAssertEqual(found.keys.filter { !known.contains($0) }, [], "unknown keys in \(document)")
                XCTAssertEqual(found.sections.filter { !sections.contains($0) }, [], "unknown sections in \(document)")
            }
        }
    }

    func testTheAnnotatedFileIsTheRepositorysSidecarYAML() throws {
        let blocks = try Self.yamlBlocks(read("Docs/configuration.md"))
        XCTAssertTrue(blocks.contains(try read("sidecar.yaml")),
                      "Docs/configuration.md must carry sidecar.yaml exactly (copy the file into its yaml block)")
    }

    /// A declared key is documented once, in its declaration: `sidecar.yaml` carries that doc
    /// beside the key, and a value it shows (not commented out) is the key's default.
    func testSidecarYAMLShowsEachDeclaredKeyWithItsDocAndDefault() throws {
        let shown = Self.annotatedKeys(in: try read("sidecar.yaml"))
        XCTAssertFalse(Config.declaredKeys.isEmpty)
        for key in Config.declaredKeys {
            guard let entry = shown[key.path] else {
                XCTFail("\(key.path) is declared but sidecar.yaml does not show it")
                continue
            }
            XCTAssertEqual(entry.doc, key.doc, "\(key.path): the comment beside it in sidecar.yaml is its declared doc")
            XCTAssertFalse(key.doc.isEmpty, "\(key.path) has no doc")
            guard !entry.commented, !key.isRequired else { continue }
            XCTAssertEqual(key.isDefault(Self.unquoted(entry.value)), true,
                           "\(key.path): sidecar.yaml shows \(entry.value), its default is \(key.defaultShown)")
        }
    }

    /// The reference's table of variables names each key's own variable.
    func testTheVariablesTableNamesEachKeysVariable() throws {
        let rows = try read("Docs/configuration.md").split(separator: "\n").filter { $0.hasPrefix("| `") }
        let pairs = rows.compactMap { row -> (key: String, variable: String)? in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2, cells[1].hasPrefix("`SIDECAR_") else { return nil }
            return (cells[0].trimmingCharacters(in: ["`"]), cells[1].trimmingCharacters(in: ["`"]))
        }
        XCTAssertFalse(pairs.isEmpty, "no table of variables in Docs/configuration.md")
        let known = Set(Config.keyPaths)
        for (key, variable) in pairs {
            XCTAssertTrue(known.contains(key), "\(key) in the table of variables is no key")
            XCTAssertEqual(variable, Config.environmentVariable(for: key))
        }
        for key in Config.declaredKeys {
            XCTAssertEqual(key.variable, Config.environmentVariable(for: key.path))
        }
    }

    /// The test of the test: a doc that wanders from its declaration, or a shown value that is
    /// not the default, is seen.
    func testAnnotatedKeysOfABlock() throws {
        let block = """
            limits:
              max_streams: 100                # concurrent HTTP/2 streams
                                              # per connection
              # max_connections: 10000        # unset: 10000
            """
        let shown = Self.annotatedKeys(in: block)
        XCTAssertEqual(shown["limits.max_streams"]?.value, "100")
        XCTAssertEqual(shown["limits.max_streams"]?.doc, "concurrent HTTP/2 streams per connection")
        XCTAssertEqual(shown["limits.max_connections"]?.commented, true)
        let maxStreams = try XCTUnwrap(Config.declaredKeys.first { $0.path == "limits.max_streams" })
        XCTAssertEqual(maxStreams.isDefault("100"), true)
        XCTAssertEqual(maxStreams.isDefault("99"), false)
        XCTAssertNil(maxStreams.isDefault("lots"))
        let headerBytes = try XCTUnwrap(Config.declaredKeys.first { $0.path == "limits.max_header_bytes" })
        XCTAssertEqual(headerBytes.isDefault("16384"), true, "16KiB written another way")
    }

    /// An entry of a named map or a list is shown under its template's path, by its first
    /// showing: the entries after it need not repeat the docs.
    func testAnnotatedKeysOfEntries() {
        let block = """
            # upstreams:
            #   api:
            #     url: http://127.0.0.1:9001  # as upstream
            # rules:
            #   - path: /admin/**             # required: a glob
                                              # on the normalized path
            #   - path: /api/**
                                              # not the first rule's
            # sites:
            #   shop:
            #     rules:
            #       - path: /x                # a site's rule
            """
        let shown = Self.annotatedKeys(in: block)
        XCTAssertEqual(shown["upstreams.<name>.url"]?.doc, "as upstream")
        XCTAssertEqual(shown["rules.path"]?.value, "/admin/**")
        XCTAssertEqual(shown["rules.path"]?.doc, "required: a glob on the normalized path")
        XCTAssertEqual(shown["sites.<name>.rules.path"]?.doc, "a site's rule")
        XCTAssertNil(shown["upstreams.api.url"])
    }

    /// Every declared key is one the schema reads, at the path the documentation shows it.
    func testEveryDeclaredKeyIsKnown() {
        let known = Set(Config.keyPaths)
        XCTAssertEqual(Config.declaredKeys.map(\.path).filter { !known.contains($0) }, [])
        for path in ["public_url", "upstream", "apple.team_id", "apple.client_id", "apple.key_id",
                     "apple.private_key_file", "apple.private_key", "upstreams.<name>.url", "rules.path",
                     "rules.set_headers", "sites.<name>.hosts", "sites.<name>.public_url", "default_site"] {
            XCTAssertTrue(Config.declaredKeys.contains { $0.path == path }, "\(path) is not declared")
        }
    }

    /// Mappings whose keys are names the operator chooses.
    static let namedMaps: Set<String> = ["upstreams", "sites"]

    /// Commented-out keys count (their nesting is the indentation after `# `); prose comments
    /// that do not start with `key:`, values and list items do not.
    func testKeyPathsOfABlock() {
        let block = """
            # Required: public_url, upstream.
            listen: 127.0.0.1:8080   # host:port
            # tls:                   # serve HTTPS
            #   cert_file: tls/cert.pem
            apple:
              team_id: ABCDE12345
              # Instead of private_key_file, the key itself, e.g. private_key: env:X
              scopes: [name, email]
                                     # (name is asked for once) a comment, not a key
              # ca_file: ca.pem
            notifications:
              # forward_to: http://127.0.0.1:3000/hooks
            access:
              public_paths:
                - /static/**
            # upstreams:
            #   api:
            #     url: http://127.0.0.1:9001
            rules:
              - path: /admin/**
                deny: true
            """
        let found = Self.keyPaths(in: block)
        XCTAssertEqual(found.keys, ["listen", "tls.cert_file", "apple.team_id", "apple.scopes", "apple.ca_file",
                                    "notifications.forward_to", "access.public_paths", "upstreams.<name>.url",
                                    "rules.path", "rules.deny"])
        XCTAssertEqual(found.sections, ["tls", "apple", "notifications", "access", "upstreams", "upstreams.<name>", "rules"])
    }

    // MARK: Reading Markdown and YAML

    /// The contents of the fenced ```yaml blocks, each ending with a newline as a file does.
    static func yamlBlocks(_ markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if var lines = current {
                if line == "```" {
                    blocks.append(lines.joined(separator: "\n") + "\n")
                    current = nil
                } else {
                    lines.append(line)
                    current = lines
                }
            } else if line == "```yaml" {
                current = []
            }
        }
        return blocks
    }

    /// Each key a block shows (set or commented out) with its value and its doc: the comment
    /// after it, joined with the comment-only lines under it that continue it (those indented
    /// past any key, at 30 columns or more). An entry of a named map is `<name>`, as the schema
    /// calls it; a key an entry shows again (the second rule's `path`) keeps its first showing.
    static func annotatedKeys(in block: String) -> [String: (value: String, commented: Bool, doc: String)] {
        var result: [String: (value: String, commented: Bool, doc: String)] = [:]
        var stack: [(indent: Int, key: String)] = []
        var last: String?
        for line in block.split(separator: "\n") {
            let leading = line.prefix { $0 == " " }.count
            let rest = line.dropFirst(leading)
            if rest.first == "#", leading >= 30, let path = last, var entry = result[path] {
                let more = rest.dropFirst().trimmingCharacters(in: .whitespaces)
                entry.doc += entry.doc.isEmpty ? more : " " + more
                result[path] = entry
                continue
            }
            last = nil
            guard let (indent, key, after, commented) = keyLine(line) else { continue }
            while let top = stack.last, top.indent >= indent { stack.removeLast() }
            let path = schemaPath(stack.map(\.key) + [String(key)])
            stack.append((indent, String(key)))
            guard result[path] == nil else { continue }
            let text = after.dropFirst().trimmingCharacters(in: .whitespaces)
            let (value, doc): (String, String)
            if text.hasPrefix("#") {
                (value, doc) = ("", text.dropFirst().trimmingCharacters(in: .whitespaces))
            } else if let mark = text.range(of: #" +# "#, options: .regularExpression) {
                (value, doc) = (String(text[..<mark.lowerBound]), String(text[mark.upperBound...]))
            } else {
                (value, doc) = (text, "")
            }
            result[path] = (value, commented, doc.trimmingCharacters(in: .whitespaces))
            last = path
        }
        return result
    }

    /// A line that names a key, set or commented out (`# key: …` counts, indented where the
    /// text after `# ` starts): its indent, the key, and what follows the key (from the colon).
    /// An item of a list of mappings (`- path: /x`) has its keys where the `- ` ends.
    static func keyLine(_ line: Substring) -> (indent: Int, key: Substring, after: Substring, commented: Bool)? {
        var rest = line.drop { $0 == " " }
        var indent = line.count - rest.count
        let commented = rest.first == "#"
        if commented {
            rest = rest.dropFirst()
            if rest.first == " " { rest = rest.dropFirst() }
            let inner = rest.prefix { $0 == " " }.count
            rest = rest.dropFirst(inner)
            indent += inner
        }
        if rest.hasPrefix("- ") {
            rest = rest.dropFirst(2)
            indent += 2
        }
        let key = rest.prefix { $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        guard let first = key.first, ("a"..."z").contains(first) else { return nil }
        let after = rest.dropFirst(key.count)
        guard after.first == ":", after.count == 1 || after.dropFirst().first == " " else { return nil }
        return (indent, key, after, commented)
    }

    static func unquoted(_ value: String) -> String {
        guard value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first else {
            return value
        }
        return String(value.dropFirst().dropLast())
    }

    /// The keys of a named map are the operator's names: the schema calls each `<name>`.
    static func schemaPath(_ segments: [String]) -> String {
        segments.enumerated().map { index, key in
            index > 0 && namedMaps.contains(segments[index - 1]) ? "<name>" : key
        }.joined(separator: ".")
    }

    /// The key paths a block mentions: `keys` have a value or nothing under them, `sections`
    /// have keys under them.
    static func keyPaths(in block: String) -> (keys: [String], sections: [String]) {
        var entries: [(indent: Int, key: String, hasValue: Bool)] = []
        for line in block.split(separator: "\n") {
            guard let (indent, key, after, _) = keyLine(line) else { continue }
            let value = after.dropFirst().drop { $0 == " " }
            entries.append((indent, String(key), !value.isEmpty && value.first != "#"))
        }
        var keys: [String] = [], sections: [String] = []
        var stack: [(indent: Int, key: String)] = []
        for (index, entry) in entries.enumerated() {
            while let last = stack.last, last.indent >= entry.indent { stack.removeLast() }
            let path = schemaPath(stack.map(\.key) + [entry.key])
            let hasChildren = index + 1 < entries.count && entries[index + 1].indent > entry.indent
            if !entry.hasValue && hasChildren { sections.append(path) } else { keys.append(path) }
            stack.append((entry.indent, entry.key))
        }
        return (keys, sections)
    }
}
