import Yams

/// A position in the configuration file (1-based, columns in Unicode scalars as libyaml counts),
/// or the environment variable a value came from instead.
struct Location: Sendable, Equatable {
    var line: Int
    var column: Int
    /// Set for a value from the environment; `line` and `column` mean nothing then.
    var variable: String? = nil

    static let start = Location(line: 1, column: 1)

    static func environment(_ variable: String) -> Location { Location(line: 0, column: 0, variable: variable) }
}

/// The composed YAML tree of a configuration file.
///
/// Yams refuses a mapping with a repeated key without saying where the repetition is, so
/// each time it does we tag the first occurrence (at the position Yams names) with a marker
/// that makes it a distinct key, and compose again. The reader then sees both occurrences
/// with their true positions and reports the duplicate under its key path.
struct YAMLDocument {
    /// Private-use characters that cannot occur in a sensible config key.
    static let markerDelimiter: Character = "\u{E000}"
    private static let maxDuplicates = 100

    private(set) var root: Node?
    /// Marker id → the key it stands for.
    private(set) var duplicateKeys: [Int: String] = [:]
    /// Markers inserted, in order, in the coordinates of the text at the time.
    private var insertions: [(line: Int, column: Int, length: Int)] = []

    /// No file at all: every setting comes from the environment.
    init() {}

    init(text: String, file: String) throws(ConfigError) {
        var working = text
        for attempt in 0...Self.maxDuplicates {
            if attempt == Self.maxDuplicates {
                throw ConfigError(kind: .duplicateKey, file: file, path: "", line: nil, column: nil,
                                  message: "more than \(Self.maxDuplicates) duplicate keys")
            }
            do {
                root = try Yams.compose(yaml: working)
                return
            } catch let YamlError.duplicatedKeysInMapping(duplicates, context) {
                let marker = "\(Self.markerDelimiter)\(attempt)\(Self.markerDelimiter)"
                guard let name = duplicates.first, let marked = Self.insert(marker, into: working, at: context.mark) else {
                    throw ConfigError(kind: .duplicateKey, file: file, path: "", line: context.mark.line,
                                      column: context.mark.column, message: "duplicate key \(quoted(duplicates.first ?? ""))")
                }
                working = marked
                duplicateKeys[attempt] = name
                insertions.append((context.mark.line, context.mark.column, marker.unicodeScalars.count))
            } catch let error as YamlError {
                var converted = Self.convert(error, file: file, text: working)
                if let line = converted.line, let column = converted.column {
                    let original = location(Location(line: line, column: column))
                    converted.line = original.line
                    converted.column = original.column
                }
                throw converted
            } catch {
                throw ConfigError(kind: .invalidYAML, file: file, path: "", line: nil, column: nil,
                                  message: "invalid YAML: \(error)")
            }
        }
    }

    /// Maps a node position back to the file as written (undoing marker insertions).
    func location(_ mark: Mark?) -> Location? {
        mark.map { location(Location(line: $0.line, column: $0.column)) }
    }

    private func location(_ position: Location) -> Location {
        var result = position
        for insertion in insertions.reversed()
        where insertion.line == result.line && result.column >= insertion.column + insertion.length {
            result.column -= insertion.length
        }
        return result
    }

    /// The key a marked key stands for, or nil when `key` carries no marker.
    func duplicateName(ofMarked key: String) -> String? {
        guard key.first == Self.markerDelimiter else { return nil }
        let parts = key.dropFirst().split(separator: Self.markerDelimiter, maxSplits: 1)
        guard let id = parts.first.flatMap({ Int($0) }) else { return nil }
        return duplicateKeys[id]
    }

    private static func insert(_ marker: String, into text: String, at mark: Mark) -> String? {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard mark.line >= 1, mark.line <= lines.count, mark.column >= 1 else { return nil }
        var scalars = Array(lines[mark.line - 1].unicodeScalars)
        guard mark.column - 1 <= scalars.count else { return nil }
        scalars.insert(contentsOf: marker.unicodeScalars, at: mark.column - 1)
        var line = String.UnicodeScalarView()
        line.append(contentsOf: scalars)
        lines[mark.line - 1] = String(line)
        return lines.joined(separator: "\n")
    }

    private static func convert(_ error: YamlError, file: String, text: String) -> ConfigError {
        func make(_ problem: String, _ context: YamlError.Context?, _ mark: Location?) -> ConfigError {
            var message = "invalid YAML: \(problem)"
            if let context, !context.text.isEmpty {
                message += " (\(context.text) at line \(context.mark.line), column \(context.mark.column))"
            }
            if let mark, let hint = indentationHint(problem, line: mark.line, text: text) { message += hint }
            return ConfigError(kind: .invalidYAML, file: file, path: "", line: mark?.line, column: mark?.column,
                               message: message)
        }
        switch error {
        case let .scanner(context, problem, mark, _),
             let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            return make(problem, context, Location(line: mark.line, column: mark.column))
        case let .reader(problem, offset, _, _):
            return make(problem, nil, offset.map { lineAndColumn(ofByte: $0, in: text) })
        default:
            return make(error.description, nil, nil)
        }
    }

    /// libyaml's wording for a misindented line ("mapping values are not allowed in this
    /// context", "did not find expected key") names no line content: the key there and the one
    /// before, with their indentation, usually show the slip. Only keys are shown, never values,
    /// which may be secrets.
    static func indentationHint(_ problem: String, line: Int, text: String) -> String? {
        let known = ["mapping values are not allowed", "did not find expected key", "did not find expected '-'",
                     "cannot start any token", "block"]
        guard known.contains(where: { problem.contains($0) }) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        func describe(_ number: Int) -> String? {
            guard number >= 1, number <= lines.count else { return nil }
            let whole = lines[number - 1]
            let body = whole.drop(while: { $0 == " " || $0 == "\t" })
            guard !body.isEmpty, !body.hasPrefix("#") else { return nil }
            let key = body.prefix(while: { $0 != ":" })
            let isKey = key.count < body.count && key.count <= 40
                && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" || $0 == ".") }
            let indent = whole.count - body.count
            let tabs = whole.prefix(indent).contains("\t") ? ", with a tab" : ""
            let what = isKey ? "`\(key):`" : body.hasPrefix("-") ? "(a list item)" : "(a value)"
            return "line \(number) \(what) indented \(indent)\(tabs)"
        }
        guard let here = describe(line) else { return nil }
        var previous: String?
        var number = line - 1
        while number >= 1, previous == nil {
            previous = describe(number)
            number -= 1
        }
        return "; \(here)" + (previous.map { " after \($0)" } ?? "")
            + ". YAML nests by indentation: a key lines up with the keys beside it, "
            + "deeper under the key it belongs to, with spaces only"
    }

    private static func lineAndColumn(ofByte offset: Int, in text: String) -> Location {
        var location = Location.start
        var consumed = 0
        for scalar in text.unicodeScalars {
            consumed += UTF8.width(scalar)
            if consumed > offset { break }
            if scalar == "\n" { location.line += 1; location.column = 1 } else { location.column += 1 }
        }
        return location
    }
}
