import Foundation

extension Config {
    /// Reads and validates `path`. Relative paths inside it (key files, `file:` secrets, unix
    /// sockets) are relative to the file's directory.
    public static func load(
        file path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigErrors) -> Config {
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

    /// Validates configuration text; `file` is only used in messages.
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
        let reader = ConfigReader(file: file, document: document)
        var schema = ConfigSchema(reader: reader, file: file, environment: environment, baseDirectory: baseDirectory)
        let config = schema.read()
        let errors = reader.finish()
        guard errors.isEmpty, let config else {
            throw ConfigErrors(errors.isEmpty
                ? [ConfigError(kind: .invalidValue, file: file, path: "", line: nil, column: nil, message: "invalid configuration")]
                : errors)
        }
        return config
    }
}
