import Glibc
import SidecarHTTP

/// Why `pages.templates` cannot be served: one line per problem, each starting with the
/// file (and line and column where the problem is inside it), as `sidecar check` prints them.
public struct OperatorTemplateErrors: Error, CustomStringConvertible {
    public let lines: [String]
    public var description: String { lines.joined(separator: "\n") }
}

extension PageRenderer {
    static let maximumTemplateBytes = 256 * 1024

    /// The renderer for `pages.templates` (nil: the built-in pages), reading every template
    /// now: at start and on SIGHUP, never per request. Every problem is collected, so one
    /// `check` run lists them all. `language` and `languageOverride`: `pages.language` and
    /// `pages.language_override`.
    public static func load(
        templates directory: String?, language: PageLanguage = .english, languageOverride: PageLanguage? = nil
    ) throws(OperatorTemplateErrors) -> PageRenderer {
        guard let directory else {
            guard language != .english || languageOverride != nil else { return .builtIn }
            return PageRenderer(operatorTemplates: [:], directory: nil, language: language, languageOverride: languageOverride)
        }
        let names: [String]
        do { names = try listDirectory(directory) } catch { throw OperatorTemplateErrors(lines: [error.description]) }
        var templates: [String: PageTemplate] = [:]
        var problems: [String] = []
        for name in names where name.hasSuffix(".html") {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            guard PageKind.templateFiles.contains(name) else {
                problems.append("\(path): not a page template name; expected one of \(PageKind.templateFiles.joined(separator: ", "))")
                continue
            }
            do {
                templates[name] = try PageTemplate(readText(path))
            } catch let error as PageTemplateError {
                problems.append("\(path):\(error)")
            } catch {
                problems.append("\(path): \(error)")
            }
        }
        guard problems.isEmpty else { throw OperatorTemplateErrors(lines: problems) }
        return PageRenderer(
            operatorTemplates: templates, directory: directory, language: language, languageOverride: languageOverride)
    }

    private struct FileProblem: Error, CustomStringConvertible {
        let description: String
    }

    private static func listDirectory(_ directory: String) throws(FileProblem) -> [String] {
        guard let handle = opendir(directory) else {
            throw FileProblem(description: "\(directory): cannot list the directory: \(String(cString: strerror(errno)))")
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    private static func readText(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw FileProblem(description: "cannot read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw FileProblem(description: "not a regular file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileProblem(description: "cannot read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            guard bytes.count <= maximumTemplateBytes else {
                throw FileProblem(description: "larger than \(maximumTemplateBytes / 1024) KiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw FileProblem(description: "not UTF-8 text") }
        return text
    }
}
