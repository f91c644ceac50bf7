/// `rules[].set_headers`: fixed header fields a rule adds to the requests it decides, as
/// Pomerium's `set_request_headers`. A client's own field of such a name never reaches the
/// upstream, in any spelling.
extension Config {
    /// One field a rule sets: a token name and a value of visible ASCII (spaces and tabs
    /// inside only), checked when the file is read.
    public struct StaticHeader: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        /// The name as every upstream compares it: lower case, `_` read as `-` (WSGI and CGI
        /// turn both into `HTTP_X_FOO`).
        public var foldedName: String { Self.fold(name) }

        public static func fold(_ name: String) -> String {
            String(decoding: name.utf8.map { $0 == UInt8(ascii: "_") ? UInt8(ascii: "-") : ($0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0) },
                   as: UTF8.self)
        }

        /// At most this many fields per rule, and bytes per value: a rule adds them to every
        /// request it decides, within the upstream's head limit.
        static let maxPerRule = 32
        static let maxValueBytes = 1_024

        /// Names that frame, route or authenticate the request (the body's type and coding
        /// among them), or that the sidecar sets itself: a fixed value there would change what
        /// the request is, not add to it.
        /// Compared folded; `proxy-*` and `x-forwarded-*` as prefixes.
        private static let reserved: Set<String> = [
            "host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
            "expect", "http2-settings", "cookie", "set-cookie", "authorization", "forwarded", "x-real-ip",
            "x-original-url", "x-original-uri", "x-rewrite-url", "x-host", "x-client-ip", "true-client-ip",
            "x-request-id", "traceparent", "tracestate", "x-http-method-override", "x-http-method",
            "x-method-override", "content-type", "content-encoding",
        ]

        /// Why `name` cannot be set, nil when it can. `identityNames`: the identity headers'
        /// names (configured and default), which only a session may fill.
        static func refusal(of name: String, identityNames: [String]) -> String? {
            let folded = fold(name)
            if reserved.contains(folded) || folded.hasPrefix("proxy-") || folded.hasPrefix("x-forwarded-") {
                return "\(quoted(name)) frames, routes or authenticates the request, or the sidecar sets it; it cannot be set"
            }
            if identityNames.contains(where: { fold($0) == folded }) {
                return "\(quoted(name)) is an identity header (headers.*): only a session fills it"
            }
            return nil
        }

        /// A field value every reader takes the same way: visible ASCII, spaces and tabs only
        /// between other characters; no CR, LF, NUL or other control, nothing outside ASCII.
        static func value(_ text: String) -> Result<String, ValueError> {
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty else {
                return .failure(ValueError("an empty value: leave the header out instead"))
            }
            guard bytes.count <= maxValueBytes else {
                return .failure(ValueError("\(bytes.count) bytes; at most \(maxValueBytes)"))
            }
            for (offset, byte) in bytes.enumerated() where !(0x21...0x7E).contains(byte) {
                let inside = offset > 0 && offset < bytes.count - 1
                if (byte == 0x20 || byte == 0x09) && inside { continue }
                let what = byte == 0x0D ? "a CR" : byte == 0x0A ? "a LF" : byte == 0 ? "a NUL"
                    : byte == 0x20 || byte == 0x09 ? "leading or trailing whitespace"
                    : byte >= 0x80 ? "a byte outside ASCII" : "a control character"
                return .failure(ValueError("\(what) in a header value (visible ASCII, with spaces or tabs inside, only)"))
            }
            return .success(text)
        }
    }
}

extension ConfigKey {
    /// `set_headers`: a mapping of header names to values, checked against each other and
    /// against the identity headers (`ParseContext.identityHeaders`).
    static func staticHeaders(
        _ field: WritableKeyPath<Root, [Config.StaticHeader]> & Sendable, _ name: String, _ doc: String
    ) -> ConfigKey {
        ConfigKey(
            name: name, doc: doc,
            read: { section, root, context in
                root[keyPath: field] = section.staticHeaders(name, identityNames: context.identityHeaders)
            },
            shown: { root in root[keyPath: field].isEmpty ? "{}" : "" },
            parsedShown: { text, _ in text == "{}" ? "{}" : nil })
    }
}

extension Section {
    /// Each name a token no other part of the request depends on, given once (however spelt:
    /// `X-Tenant`, `x_tenant`), each value one every reader reads alike.
    fileprivate func staticHeaders(_ key: String, identityNames: [String]) -> [Config.StaticHeader] {
        let entries = values(inNamedMap: key, Config.StaticHeader.value)
        let keyPath = Section.join(path, key)
        if entries.count > Config.StaticHeader.maxPerRule {
            report(.invalidValue, keyPath, at: location(of: key),
                   "\(entries.count) headers; at most \(Config.StaticHeader.maxPerRule)")
        }
        var fields: [Config.StaticHeader] = []
        var seen: [String: String] = [:]
        for (name, at, value) in entries {
            if case .failure(let error) = Names.headerName(name) {
                report(error.kind, "\(keyPath).\(name)", at: at, error.message)
                continue
            }
            if let why = Config.StaticHeader.refusal(of: name, identityNames: identityNames) {
                report(.invalidValue, "\(keyPath).\(name)", at: at, why)
                continue
            }
            let folded = Config.StaticHeader.fold(name)
            if let first = seen[folded] {
                report(.duplicateKey, "\(keyPath).\(name)", at: at,
                       "\(quoted(name)) is \(quoted(first)) again (upstreams read names without case, _ as -)")
                continue
            }
            seen[folded] = name
            if let value { fields.append(Config.StaticHeader(name: name, value: value)) }
        }
        return fields
    }
}
