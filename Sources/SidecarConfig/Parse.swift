#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SidecarHTTP
import SidecarRESP

/// Value parsers used by the schema; each failure message names what was expected.
enum Parse {
    static func duration(_ text: String) -> Result<TimeSpan, ValueError> {
        guard let span = TimeSpan(parsing: text) else {
            return .failure(ValueError("invalid duration \(quoted(text)) (use e.g. 90s, 15m, 24h, 7d)"))
        }
        return .success(span)
    }

    static func positiveDuration(_ text: String) -> Result<TimeSpan, ValueError> {
        duration(text).flatMap { span in
            span.isZero ? .failure(ValueError("must be longer than 0 (use e.g. 90s, 15m, 24h, 7d)")) : .success(span)
        }
    }

    static func bool(_ text: String) -> Result<Bool, ValueError> {
        switch text {
        case "true", "True", "TRUE": return .success(true)
        case "false", "False", "FALSE": return .success(false)
        default: return .failure(ValueError("expected true or false, found \(quoted(text))"))
        }
    }

    static func byteSize(_ text: String) -> Result<Int, ValueError> {
        guard let bytes = ByteSize.parse(text) else {
            return .failure(ValueError("invalid size \(quoted(text)) (use e.g. 512, 16KiB, 10MiB)"))
        }
        return .success(bytes)
    }

    static func byteSize(in range: ClosedRange<Int>) -> @Sendable (String) -> Result<Int, ValueError> {
        { text in
            byteSize(text).flatMap { bytes in
                range.contains(bytes) ? .success(bytes)
                    : .failure(ValueError("\(quoted(text)) is out of range (\(ByteSize.format(range.lowerBound))–\(ByteSize.format(range.upperBound)))"))
            }
        }
    }

    static func integer(in range: ClosedRange<Int>) -> @Sendable (String) -> Result<Int, ValueError> {
        { text in
            guard let value = Int(text) else { return .failure(ValueError("expected a whole number, found \(quoted(text))")) }
            guard range.contains(value) else {
                return .failure(ValueError("\(value) is out of range (\(range.lowerBound)–\(range.upperBound))"))
            }
            return .success(value)
        }
    }

    static let maxWorkers = 256

    /// One event loop per online core, within 1…256.
    static var defaultWorkers: Int { min(max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1), maxWorkers) }

    static func workers(_ text: String) -> Result<Int, ValueError> {
        text == "auto" ? .success(defaultWorkers) : integer(in: 1...maxWorkers)(text)
    }

    /// A share from 0 to 1 (`0.25`, `1`).
    static func ratio(_ text: String) -> Result<Double, ValueError> {
        guard let value = Double(text), value.isFinite else {
            return .failure(ValueError("expected a number from 0.0 to 1.0, found \(quoted(text))"))
        }
        guard (0.0...1.0).contains(value) else {
            return .failure(ValueError("\(text) is out of range (0.0–1.0)"))
        }
        return .success(value)
    }

    /// An OTLP/HTTP collector, `http` or `https` (verified against the system store and
    /// `tracing.otlp_ca_file`), no query; its path defaults to `/v1/traces`.
    static func otlpEndpoint(_ text: String) -> Result<HTTPURL, ValueError> {
        HTTPURL.parse(text, allowPath: true, allowQuery: false, allowUnderscoreHost: true).map { url in
            var endpoint = url
            if endpoint.path.isEmpty { endpoint.path = Config.Tracing.otlpTracesPath }
            return endpoint
        }
    }

    static func cidr(_ text: String) -> Result<CIDR, ValueError> {
        if let block = CIDR(text) { return .success(block) }
        if let masked = CIDR(text, maskingHostBits: true) {
            return .failure(ValueError("\(quoted(text)) has host bits set (did you mean \(quoted(masked.description))?)"))
        }
        return .failure(ValueError("invalid CIDR \(quoted(text)) (use e.g. 10.0.0.0/8, 192.168.1.7 or fd00::/8)"))
    }

    static func oneOf<T: RawRepresentable & CaseIterable & Sendable>(_ type: T.Type) -> @Sendable (String) -> Result<T, ValueError>
    where T.RawValue == String {
        let cases = Array(T.allCases)
        let choices = cases.map(\.rawValue).joined(separator: ", ")
        return { text in
            guard let value = cases.first(where: { $0.rawValue == text }) else {
                return .failure(ValueError("invalid value \(quoted(text)) (one of: \(choices))"))
            }
            return .success(value)
        }
    }

    static func nonEmpty(_ text: String) -> Result<String, ValueError> {
        guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            return .failure(ValueError("expected a non-empty value without control characters"))
        }
        return .success(text)
    }

    /// A path to a file other modules open later; relative to the config's directory.
    static func path(baseDirectory: String) -> @Sendable (String) -> Result<String, ValueError> {
        { text in nonEmpty(text).map { FilePath.resolve($0, against: baseDirectory) } }
    }

    /// A file other modules open later, checked now so that `sidecar check` catches it.
    static func readableFile(baseDirectory: String) -> @Sendable (String) -> Result<String, ValueError> {
        { text in
            path(baseDirectory: baseDirectory)(text).flatMap { path in
                FilePath.checkReadable(path).map { .failure($0) } ?? .success(path)
            }
        }
    }

    /// A directory other modules read later (`pages.templates`), checked now.
    static func directory(baseDirectory: String) -> @Sendable (String) -> Result<String, ValueError> {
        { text in
            path(baseDirectory: baseDirectory)(text).flatMap { path in
                FilePath.checkDirectory(path).map { .failure($0) } ?? .success(path)
            }
        }
    }

    static func revocationStore(baseDirectory: String) -> @Sendable (String) -> Result<RevocationStore, ValueError> {
        { text in
            if text == "memory" { return .success(.memory) }
            if text.hasPrefix("file:") {
                let path = String(text.dropFirst(5))
                guard !path.isEmpty else { return .failure(ValueError("file: needs a path, e.g. file:/var/lib/sidecar/revocations")) }
                return .success(.file(path: FilePath.resolve(path, against: baseDirectory)))
            }
            if text.hasPrefix("redis://") { return RedisAddress.parseServer(text, tls: false).map { .redis($0) } }
            if text.hasPrefix("rediss://") { return RedisAddress.parseServer(text, tls: true).map { .redis($0) } }
            if text.hasPrefix("redis+sentinel://") { return RedisAddress.parseSentinels(text, tls: false).map { .redis($0) } }
            if text.hasPrefix("rediss+sentinel://") { return RedisAddress.parseSentinels(text, tls: true).map { .redis($0) } }
            return .failure(ValueError(
                "invalid store \(quoted(text)) (memory, file:/path, redis://host:port/db, rediss://host:port/db, "
                    + "redis+sentinel://host:port,host:port/master/db or rediss+sentinel://…)"))
        }
    }
}
