import SidecarHTTP

/// `upstreams` and `rules`. A rule that reads wrong is an error, never a rule quietly
/// dropped: a rule that does not load could only widen access.
extension ConfigSchema {
    /// At most this many named upstreams: each is a label value of the upstream metrics.
    static let maxUpstreams = 32
    static let maxRules = 1_000

    mutating func readUpstreams(
        _ root: Section, topLevel: Config.TopLevel, context: ParseContext
    ) -> [Config.NamedUpstream] {
        _ = readUpstream(root.entryTemplate("upstreams").entryTemplate("<name>"), name: "", topLevel: topLevel,
                         context: context)
        let entries = root.sections(inNamedMap: "upstreams")
        if entries.count > Self.maxUpstreams {
            reader.report(.invalidValue, "upstreams", at: root.location(of: "upstreams"),
                          "\(entries.count) upstreams; at most \(Self.maxUpstreams)")
        }
        return entries.compactMap { name, at, section in
            let upstream = readUpstream(section, name: name, topLevel: topLevel, context: context)
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
        _ section: Section, name: String, topLevel: Config.TopLevel, context: ParseContext
    ) -> Config.NamedUpstream? {
        let entry = section.read(Config.UpstreamEntry.self, over: Config.UpstreamEntry(inheriting: topLevel),
                                 context: context)
        let target = entry.servers.first?.target
        let tls = readUpstreamTLS(section, key: "tls", upstream: target)
        let healthCheck = section.section("health_check").read(Config.HealthCheck.self, context: context)
        guard let target else { return nil }
        var upstream = Config.NamedUpstream(name: name, target: target, timeout: entry.timeout,
                                            connectTimeout: entry.connectTimeout)
        upstream.maxConnections = entry.maxConnections
        upstream.tls = tls
        upstream.servers = entry.servers
        upstream.balancing = entry.balancing
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
        _ root: Section, upstreams: [Config.NamedUpstream], access: Config.Access, context: ParseContext
    ) -> [Config.Rule] {
        var context = context
        context.upstreamNames = upstreams.map(\.name)
        _ = readRule(root.entryTemplate("rules"), index: 0, context: context)
        let sections = root.sections(inList: "rules")
        if sections.count > Self.maxRules {
            reader.report(.invalidValue, "rules", at: root.location(of: "rules"), "\(sections.count) rules; at most \(Self.maxRules)")
        }
        let rules = sections.enumerated().compactMap { index, section in readRule(section, index: index, context: context) }
        guard rules.count == sections.count else { return rules }  // errors reported; nothing loads
        warnShadowed(rules)
        warnPublicAPIPaths(rules, access: access)
        for upstream in upstreams where !rules.contains(where: { $0.upstream == upstream.name }) {
            warnings.append(ConfigWarning(path: "upstreams.\(upstream.name)", message: "no rule routes to it"))
        }
        return rules
    }

    /// One entry of `rules`, or of a site's (`context` names the upstreams it may route to and
    /// the identity headers it may not set).
    func readRule(_ section: Section, index: Int, context: ParseContext) -> Config.Rule? {
        var rule = section.read(Config.Rule.self, over: Config.Rule(index: index, path: "/"), context: context)
        if section.contains("methods"), rule.methods.isEmpty, !reader.hasErrors(at: "\(section.path).methods") {
            reader.report(.invalidValue, "\(section.path).methods", at: section.location(of: "methods"),
                          "an empty list would match no request; leave methods out to match every method")
        }
        rule.line = section.location.line
        rule.column = section.location.column

        // What would contradict itself is refused, not guessed: a guess could admit someone.
        let restricting = ["allowed_emails", "allowed_email_domains", "allowed_subjects", "allow_private_relay"]
        if rule.deny {
            for key in ["public", "api", "upstream", "cors_preflight", "set_headers"] + restricting where section.contains(key) {
                reader.report(.conflict, "\(section.path).\(key)", at: section.location(of: key),
                              "a deny rule answers 403 to every request it matches; \(key) would mean nothing")
            }
        } else if rule.isPublic {
            for key in ["api", "cors_preflight"] + restricting where section.contains(key) {
                reader.report(.conflict, "\(section.path).\(key)", at: section.location(of: key),
                              "a public rule admits everyone without a session; \(key) would be ignored")
            }
        }
        guard section.contains("path"), !reader.hasErrors(at: "\(section.path).path") else { return nil }
        return rule
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
