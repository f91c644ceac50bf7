import SidecarHTTP

/// `upstreams` and `rules`. A rule that reads wrong is an error, never a rule quietly
/// dropped: a rule that does not load could only widen access.
extension ConfigSchema {
    /// At most this many named upstreams: each is a label value of the upstream metrics.
    static let maxUpstreams = 32
    static let maxRules = 1_000

    mutating func readUpstreams(
        _ root: Section, timeout: TimeSpan, connectTimeout: TimeSpan, maxConnections: Int, balancing: Config.Balancing
    ) -> [Config.NamedUpstream] {
        _ = readUpstream(root.entryTemplate("upstreams").entryTemplate("<name>"), name: "",
                         timeout: timeout, connectTimeout: connectTimeout, maxConnections: maxConnections,
                         balancing: balancing)
        let entries = root.sections(inNamedMap: "upstreams")
        if entries.count > Self.maxUpstreams {
            reader.report(.invalidValue, "upstreams", at: root.location(of: "upstreams"),
                          "\(entries.count) upstreams; at most \(Self.maxUpstreams)")
        }
        return entries.compactMap { name, at, section in
            let upstream = readUpstream(
                section, name: name, timeout: timeout, connectTimeout: connectTimeout, maxConnections: maxConnections,
                balancing: balancing)
            guard Self.isUpstreamName(name) else {
                reader.report(.invalidValue, section.path, at: at, name == Config.defaultUpstreamName
                    ? "\(quoted(name)) is the top-level upstream's name; choose another"
                    : "invalid upstream name \(quoted(name)) (1–32 of a-z, 0-9, _ and -, starting with a letter or digit)")
                return nil
            }
            return upstream
        }
    }

    private mutating func readUpstream(
        _ section: Section, name: String, timeout: TimeSpan, connectTimeout: TimeSpan, maxConnections: Int,
        balancing: Config.Balancing
    ) -> Config.NamedUpstream? {
        let servers = readServers(section, key: "url", required: true)
        let target = servers?.first?.target
        let balancing = readBalancing(section, defaults: balancing)
        let timeout = section.value("upstream_timeout", default: timeout, Parse.positiveDuration)
        let connectTimeout = section.value("upstream_connect_timeout", default: connectTimeout, Parse.positiveDuration)
        let maxConnections = section.value("max_connections", default: maxConnections, Parse.integer(in: 0...1_000_000))
        let tls = readUpstreamTLS(section, key: "tls", upstream: target)
        let healthCheck = section.section("health_check").read(
            Config.HealthCheck.self, context: ParseContext(baseDirectory: baseDirectory, environment: environment))
        guard let target else { return nil }
        var upstream = Config.NamedUpstream(name: name, target: target, timeout: timeout, connectTimeout: connectTimeout)
        upstream.maxConnections = maxConnections
        upstream.tls = tls
        upstream.servers = servers ?? []
        upstream.balancing = balancing
        upstream.healthCheck = healthCheck
        return upstream
    }

    static func isUpstreamName(_ name: String) -> Bool {
        guard name != Config.defaultUpstreamName, (1...32).contains(name.utf8.count),
              let first = name.utf8.first, first != UInt8(ascii: "_"), first != UInt8(ascii: "-") else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    mutating func readRules(
        _ root: Section, upstreams: [Config.NamedUpstream], access: Config.Access, headers: Config.Headers
    ) -> [Config.Rule] {
        let names = upstreams.map(\.name)
        let identityNames = headers.strippedIdentityHeaders
        _ = readRule(root.entryTemplate("rules"), index: 0, upstreams: names, identityNames: identityNames)
        let sections = root.sections(inList: "rules")
        if sections.count > Self.maxRules {
            reader.report(.invalidValue, "rules", at: root.location(of: "rules"), "\(sections.count) rules; at most \(Self.maxRules)")
        }
        let rules = sections.enumerated().compactMap { index, section in readRule(section, index: index, upstreams: names, identityNames: identityNames)
        }
        guard rules.count == sections.count else { return rules }  // errors reported; nothing loads
        warnShadowed(rules)
        warnPublicAPIPaths(rules, access: access)
        for upstream in upstreams where !rules.contains(where: { $0.upstream == upstream.name }) {
            warnings.append(ConfigWarning(path: "upstreams.\(upstream.name)", message: "no rule routes to it"))
        }
        return rules
    }

    /// `setsHeaders`: whether the rule may have `set_headers` (a site's own rules may not: the
    /// rewriter renders the fields from the top-level rules alone).
    func readRule(
        _ section: Section, index: Int, upstreams: [String], identityNames: [String], setsHeaders: Bool = true
    ) -> Config.Rule? {
        let path = section.required("path", Names.pathGlob)
        var refused = false
        let methods = section.list("methods", default: []) { text -> Result<String, ValueError> in
            let upper = text.uppercased()
            guard HTTPMethodSet.method(named: upper) != nil else {
                refused = true
                return .failure(ValueError("unknown method \(quoted(text)) (GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE or CONNECT)"))
            }
            return .success(upper)
        }
        if section.contains("methods") && methods.isEmpty && !refused {
            reader.report(.invalidValue, "\(section.path).methods", at: section.location(of: "methods"),
                          "an empty list would match no request; leave methods out to match every method")
        }
        let host = section.optional("host", Self.ruleHost)
        let isPublic = section.bool("public", default: false)
        let isAPI = section.bool("api", default: false)
        let deny = section.bool("deny", default: false)
        var rule = Config.Rule(index: index, path: path ?? "/")
        rule.methods = methods
        rule.host = host
        rule.isPublic = isPublic
        rule.isAPI = isAPI
        rule.deny = deny
        rule.allowedEmails = section.list("allowed_emails", default: [], Names.email)
        rule.allowedEmailDomains = section.list("allowed_email_domains", default: [], Names.emailDomain)
        rule.allowedSubjects = section.list("allowed_subjects", default: [], Parse.nonEmpty)
        rule.allowPrivateRelay = section.contains("allow_private_relay") ? section.bool("allow_private_relay", default: true) : nil
        rule.upstream = section.optional("upstream") { name in
            upstreams.contains(name) || name == Config.defaultUpstreamName ? .success(name)
                : .failure(ValueError("no upstream named \(quoted(name)) (upstreams: \(upstreams.isEmpty ? "none" : upstreams.joined(separator: ", ")))"))
        }
        if rule.upstream == Config.defaultUpstreamName { rule.upstream = nil }
        rule.corsPreflight = section.optional("cors_preflight") { text in
            Config.CORSPreflight(rawValue: text).map { .success($0) }
                ?? .failure(ValueError("\(quoted(text)) is not forward or refuse"))
        }
        if setsHeaders { rule.setHeaders = readSetHeaders(section, identityNames: identityNames) }
        rule.line = section.location.line
        rule.column = section.location.column

        // What would contradict itself is refused, not guessed: a guess could admit someone.
        let restricting = ["allowed_emails", "allowed_email_domains", "allowed_subjects", "allow_private_relay"]
        if deny {
            for key in ["public", "api", "upstream", "cors_preflight", "set_headers"] + restricting where section.contains(key) {
                reader.report(.conflict, "\(section.path).\(key)", at: section.location(of: key),
                              "a deny rule answers 403 to every request it matches; \(key) would mean nothing")
            }
        } else if isPublic {
            for key in ["api", "cors_preflight"] + restricting where section.contains(key) {
                reader.report(.conflict, "\(section.path).\(key)", at: section.location(of: key),
                              "a public rule admits everyone without a session; \(key) would be ignored")
            }
        }
        guard path != nil else { return nil }
        return rule
    }

    /// `set_headers`: each name a token no other part of the request depends on, given once
    /// (however spelt: `X-Tenant`, `x_tenant`), each value one every reader reads alike.
    private func readSetHeaders(_ section: Section, identityNames: [String]) -> [Config.StaticHeader] {
        let entries = section.values(inNamedMap: "set_headers", Config.StaticHeader.value)
        let path = "\(section.path).set_headers"
        if entries.count > Config.StaticHeader.maxPerRule {
            reader.report(.invalidValue, path, at: section.location(of: "set_headers"),
                          "\(entries.count) headers; at most \(Config.StaticHeader.maxPerRule)")
        }
        var fields: [Config.StaticHeader] = []
        var seen: [String: String] = [:]
        for (name, at, value) in entries {
            if case .failure(let error) = Names.headerName(name) {
                reader.report(error, "\(path).\(name)", at: at)
                continue
            }
            if let why = Config.StaticHeader.refusal(of: name, identityNames: identityNames) {
                reader.report(.invalidValue, "\(path).\(name)", at: at, why)
                continue
            }
            let folded = Config.StaticHeader.fold(name)
            if let first = seen[folded] {
                reader.report(.duplicateKey, "\(path).\(name)", at: at,
                              "\(quoted(name)) is \(quoted(first)) again (upstreams read names without case, _ as -)")
                continue
            }
            seen[folded] = name
            if let value { fields.append(Config.StaticHeader(name: name, value: value)) }
        }
        return fields
    }

    /// `admin.example.com`, `10.0.0.7`, `[::1]`: compared with the request's `Host` without its port.
    private static func ruleHost(_ text: String) -> Result<String, ValueError> {
        var bare = text
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        guard let host = HostName.normalized(bare), !host.hasSuffix(".") else {
            return .failure(ValueError("invalid host \(quoted(text)) (a name or an IP address, without a port)"))
        }
        return .success(host.contains(":") ? "[\(host)]" : host)
    }

    /// A rule an earlier one always wins over can never decide anything.
    private mutating func warnShadowed(_ rules: [Config.Rule]) {
        for (j, later) in rules.enumerated() {
            let laterCondition = Self.condition(later)
            for earlier in rules[..<j] {
                let condition = Self.condition(earlier)
                guard condition.glob.covers(laterCondition.glob), condition.methods.covers(laterCondition.methods),
                      earlier.host == nil || earlier.host == later.host else { continue }
                warnings.append(ConfigWarning(
                    path: "rules[\(j)]",
                    message: "can never match: rules[\(earlier.index)]\(earlier.line.map { " (line \($0))" } ?? "") "
                        + "matches every request it would (\(earlier.path) before \(later.path))",
                    line: later.line, column: later.column))
                break
            }
        }
    }

    /// A pattern that is not in normalized form (`//`, `/./`, `%2e`, `%2F`) can never match: requests
    /// are matched on their normalized path, which merges, removes and decodes these.
    mutating func warnUnnormalizedPatterns(_ rules: [Config.Rule], access: Config.Access, separators: EncodedSeparators) {
        func check(_ pattern: String, _ path: String, line: Int?, column: Int?) {
            let normalized = try? PathNormalizer.normalize(pattern, separators: separators)
            guard normalized != pattern else { return }
            let why = normalized.map { "requests are matched on normalized paths, where it reads \($0)" }
                ?? "no request path can be spelled so (paths.encoded_slashes: \(separators.rawValue))"
            warnings.append(ConfigWarning(
                path: path, message: "\(pattern) can never match: \(why)", line: line, column: column))
        }
        for rule in rules { check(rule.path, "rules[\(rule.index)].path", line: rule.line, column: rule.column) }
        for pattern in access.publicPaths { check(pattern, "access.public_paths", line: nil, column: nil) }
        for pattern in access.apiPaths { check(pattern, "access.api_paths", line: nil, column: nil) }
    }

    /// A public rule over a path that `access.api_paths` lists: the rule wins, so those API
    /// requests need no session at all — rarely what listing them meant.
    private mutating func warnPublicAPIPaths(_ rules: [Config.Rule], access: Config.Access) {
        for rule in rules where rule.isPublic {
            let glob = PathGlob(rule.path)
            for apiPath in access.apiPaths {
                let api = PathGlob(apiPath)
                guard glob.covers(api) || api.covers(glob) else { continue }
                warnings.append(ConfigWarning(
                    path: "rules[\(rule.index)]",
                    message: "makes \(rule.path) public, which access.api_paths also lists (\(apiPath)): "
                        + "the rule wins, so those requests are served without a session",
                    line: rule.line, column: rule.column))
                break
            }
        }
    }

    static func condition(_ rule: Config.Rule) -> PathRuleCondition {
        PathRuleCondition(
            glob: rule.path, methods: HTTPMethodSet(rule.methods.compactMap(HTTPMethodSet.method(named:))), host: rule.host)
    }
}
