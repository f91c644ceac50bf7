#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a single value was refused; the reader adds file, key path, line and column.
struct ValueError: Error {
    var message: String
    var kind: ConfigError.Kind

    init(_ message: String, kind: ConfigError.Kind = .invalidValue) {
        self.message = message
        self.kind = kind
    }
}

/// `"text"` with quotes, control characters escaped, long values shortened — safe to print.
func quoted(_ text: String) -> String {
    // Before the cut at 120: a long password would otherwise lose its `@`, and with it the
    // mark of where it ends.
    let text = Userinfo.redacted(text)
    var out = "\""
    for scalar in text.unicodeScalars.prefix(120) {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value):
            out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    if text.unicodeScalars.count > 120 { out += "…" }
    return out + "\""
}

enum FilePath {
    /// Relative paths in the config are relative to the config file's directory.
    static func resolve(_ path: String, against baseDirectory: String) -> String {
        if path.hasPrefix("/") || baseDirectory.isEmpty || baseDirectory == "." { return path }
        return baseDirectory.hasSuffix("/") ? baseDirectory + path : baseDirectory + "/" + path
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Reads a regular file of at most `limit` bytes; errors name the reason, never the content.
    static func contents(_ path: String, limit: Int = 1 << 20) -> Result<[UInt8], ValueError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(unreadable(path, errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(unreadable(path, errno)) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ValueError("\(quoted(path)) is not a regular file", kind: .unresolvable))
        }
        guard info.st_size <= limit else {
            return .failure(ValueError("\(quoted(path)) is larger than \(ByteSize.format(limit))", kind: .unresolvable))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(unreadable(path, errno))
            }
            if count == 0 { break }
            bytes += chunk[..<count]
            guard bytes.count <= limit else {
                return .failure(ValueError("\(quoted(path)) is larger than \(ByteSize.format(limit))", kind: .unresolvable))
            }
        }
        return .success(bytes)
    }

    /// Whether `path` is a directory this process may list (for `pages.templates`).
    static func checkDirectory(_ path: String) -> ValueError? {
        var info = stat()
        guard stat(path, &info) == 0 else { return unreadable(path, errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            return ValueError("\(quoted(path)) is not a directory", kind: .unresolvable)
        }
        guard access(path, R_OK | X_OK) == 0 else { return unreadable(path, errno) }
        return nil
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether the file exists and this process may read it (for files other modules open later).
    static func checkReadable(_ path: String) -> ValueError? {
        switch contents(path, limit: 16 << 20) {
        case .success: return nil
        case .failure(let error): return error
        }
    }

    /// Names the path as written and, when relative, where it resolved: a relative path is
    /// read from the current directory, which is seldom the one the operator had in mind.
    private static func unreadable(_ path: String, _ code: Int32) -> ValueError {
        var shown = quoted(path)
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            if let cwd = getcwd(&buffer, buffer.count) {
                shown += " (\(String(cString: cwd))/\(path))"
            }
        }
        return ValueError("cannot read \(shown): \(String(cString: strerror(code)))", kind: .unresolvable)
    }
}
