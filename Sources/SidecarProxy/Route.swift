import SidecarConfig
import SidecarHTTP

/// `rules`, compiled once per configuration load: which rules decide a request (walks down
/// a trie of literal path segments, not a scan of globs) and what those rules say.
///
/// A request is decided on every way a common upstream may read it (SPEC §4.3, "the
/// strictest reading wins"): its normalized path and its lenient reading (`LenientPath`:
/// `;parameters`, trailing dots and case gone), each under its own method and under every
/// method an override field names. Restrictions add up over the readings; a request is
/// public only if every reading is.
final class Route {
    /// A rule's decision as plain data: read per request without touching a reference count
    /// (reading a field of a `Config.Rule` in an array copies the rule, retaining each
    /// of its strings and arrays).
    struct Action {
        var upstream: Int
        var isPublic: Bool
        var isAPI: Bool
        var deny: Bool
        var restrictsUsers: Bool
        /// Whether a CORS preflight it decides is forwarded: true, false, or nil where that
        /// depends on `access.api_paths`.
        var forwardsPreflight: Bool?
        /// The rule names its upstream (else, with `sites`, the site's upstream serves it).
        var namesUpstream = false
        /// Its `set_headers` (`RuleHeaders`; 0: none).
        var headers: RuleHeaders.Group = 0
    }

    /// The rules as written, for the normalized path.
    private let table: PathRuleTable
    /// The rules with their globs in lower case, for the lenient reading (the same table
    /// when no glob has an upper-case letter).
    private let foldedTable: PathRuleTable
    private let actions: UnsafeMutableBufferPointer<Action>
    /// `set_headers` of every rule of every site, compiled (these rules are its list `list`).
    let headers: RuleHeaders
    /// The rule's `allowed_*`, nil where it lets every signed-in user pass.
    private let access: [AccessRules?]
    let isEmpty: Bool
    /// Some glob has an upper-case letter: the lenient reading must be matched even where it
    /// is the path itself.
    let foldingMatters: Bool
    /// Some rule lists `methods`: method-override fields take part in matching.
    let methodsMatter: Bool

    /// `headers`: the configuration's fields, whose list `list` are `rules`; nil: compiled from
    /// `rules` alone.
    init(_ rules: [Config.Rule], upstreams: [Config.NamedUpstream] = [], headers: RuleHeaders? = nil, list: Int = 0) {
        let conditions = rules.map(\.condition)
        table = PathRuleTable(conditions)
        let folded = conditions.map { condition in
            var lower = condition
            lower.glob = PathGlob(condition.glob.pattern.lowercased())
            return lower
        }
        foldingMatters = folded.map(\.glob) != conditions.map(\.glob)
        foldedTable = foldingMatters ? PathRuleTable(folded) : table
        methodsMatter = conditions.contains { !$0.methods.isEmpty }
        self.headers = headers ?? RuleHeaders(lists: [rules])
        let groups = self.headers.groupsOfList[headers == nil ? 0 : list]
        actions = .allocate(capacity: max(1, rules.count))
        for (index, rule) in rules.enumerated() {
            (actions.baseAddress! + index).initialize(to: Action(
                upstream: rule.upstreamIndex(in: upstreams), isPublic: rule.isPublic, isAPI: rule.isAPI, deny: rule.deny,
                restrictsUsers: rule.restrictsUsers,
                forwardsPreflight: rule.corsPreflight.map { $0 == .forward } ?? (rule.isAPI ? true : nil),
                namesUpstream: rule.upstream != nil, headers: groups[index]))
        }
        access = rules.map { $0.restrictsUsers ? AccessRules($0) : nil }
        isEmpty = rules.isEmpty
    }

    deinit { actions.deallocate() }

    /// The first rule matching the normalized `path`, `method` and `host` (the `Host`
    /// value, port and all), nil when none does: one reading only.
    func match(path: [UInt8], method: HTTPMethod, host: UnsafeRawBufferPointer?) -> Int? {
        guard !isEmpty else { return nil }
        return path.withUnsafeBytes { table.firstMatch(path: $0, method: method, host: host) }
    }

    /// What every reading of `request` asks of it. `publicPaths`: where no rule matches, a
    /// reading is public if it matches them (nil: such a reading needs a session).
    func verdict(_ request: RequestReadings, publicPaths: PublicPaths?) -> RuleVerdict {
        var verdict = RuleVerdict()
        verdict.rule = consider(
            table, request.path, request.method, request.host, publicPaths?.asWritten, into: &verdict)
        var overrides = request.overrides
        overrides.remove(request.method)
        let extra = overrides.isEmpty ? [] : overrides.methods
        for method in extra {
            _ = consider(table, request.path, method, request.host, publicPaths?.asWritten, into: &verdict)
        }
        if let lenient = request.lenient {
            _ = consider(foldedTable, lenient, request.method, request.host, publicPaths?.folded, into: &verdict)
            for method in extra {
                _ = consider(foldedTable, lenient, method, request.host, publicPaths?.folded, into: &verdict)
            }
        }
        return verdict
    }

    /// Adds what one reading asks to `verdict`; returns the rule that decided it.
    @inline(__always) private func consider(
        _ table: PathRuleTable, _ path: UnsafeRawBufferPointer, _ method: HTTPMethod,
        _ host: UnsafeRawBufferPointer?, _ publicPaths: PathGlobSet?, into verdict: inout RuleVerdict
    ) -> Int? {
        if !isEmpty, let rule = table.firstMatch(path: path, method: method, host: host) {
            let action = actions[rule]
            verdict.noteHeaders(action.headers, rule: rule)
            if action.isAPI { verdict.isAPI = true }
            if action.deny {
                if verdict.deny.map({ rule < $0 }) ?? true { verdict.deny = rule }
            } else if !action.isPublic {
                verdict.needsSession = true
                if action.restrictsUsers { verdict.restricting.insert(rule) }
            }
            return rule
        }
        verdict.noteHeaders(0, rule: nil)
        if let publicPaths, !publicPaths.isEmpty, publicPaths.matches(path) { return nil }
        verdict.needsSession = true
        return nil
    }

    /// Whether every reading of a CORS preflight lets it be forwarded without a session: its
    /// rule is public or forwards preflights (`cors_preflight`, by default an `api` rule's
    /// choice), or no rule decides it and it is a public path or an API path. The readings are
    /// those of `verdict` under the request's own method (a preflight names no override).
    func admitsPreflight(_ request: RequestReadings, publicPaths: PublicPaths, apiPaths: PublicPaths) -> Bool {
        guard admitsPreflight(table, request.path, request.host, publicPaths.asWritten, apiPaths.asWritten) else {
            return false
        }
        guard let lenient = request.lenient else { return true }
        return admitsPreflight(foldedTable, lenient, request.host, publicPaths.folded, apiPaths.folded)
    }

    private func admitsPreflight(
        _ table: PathRuleTable, _ path: UnsafeRawBufferPointer, _ host: UnsafeRawBufferPointer?,
        _ publicPaths: PathGlobSet, _ apiPaths: PathGlobSet
    ) -> Bool {
        if !isEmpty, let rule = table.firstMatch(path: path, method: .options, host: host) {
            let action = actions[rule]
            if action.deny { return false }
            if action.isPublic { return true }
            if let forwards = action.forwardsPreflight { return forwards }
            return !apiPaths.isEmpty && apiPaths.matches(path)
        }
        if !publicPaths.isEmpty, publicPaths.matches(path) { return true }
        return !apiPaths.isEmpty && apiPaths.matches(path)
    }

    /// What rule `index` (from `match` or a verdict) decides.
    @inline(__always) func action(_ index: Int) -> Action { actions[index] }

    /// Why rule `index` refuses the signed-in user, nil when it lets them pass.
    func refusal(_ index: Int, subject: String, email: String?, privateEmail: Bool) -> AccessRules.Denial? {
        access[index]?.check(subject: subject, email: email, privateEmail: privateEmail)
    }

    /// Why the verdict's rules refuse the signed-in user: the first refusing rule and why.
    func refusal(
        _ verdict: RuleVerdict, subject: String, email: String?, privateEmail: Bool
    ) -> (rule: Int, reason: String)? {
        if verdict.restricting.overflowed { return (verdict.restricting.first, "too_many_readings") }
        for k in 0..<verdict.restricting.count {
            let rule = verdict.restricting[k]
            if let denial = refusal(rule, subject: subject, email: email, privateEmail: privateEmail) {
                return (rule, denial.rawValue)
            }
        }
        return nil
    }
}

/// `access.public_paths` as written (matched on the normalized path: a public path admits
/// only an exact-case match) and folded (matched on the lenient reading).
struct PublicPaths {
    let asWritten: PathGlobSet
    let folded: PathGlobSet
    /// Some pattern has an upper-case letter.
    let foldingMatters: Bool

    init(_ patterns: [String]) {
        asWritten = PathGlobSet(patterns)
        folded = PathGlobSet(patterns.map { $0.lowercased() })
        foldingMatters = asWritten != folded
    }

    var isEmpty: Bool { asWritten.isEmpty }
}

/// The readings of one request a decision must hold for; the buffers are borrowed.
struct RequestReadings {
    /// The normalized path: what is forwarded.
    var path: UnsafeRawBufferPointer
    /// Its lenient reading (`LenientPath`); nil where that reading would decide as `path`
    /// does (it is `path` itself and no pattern has an upper-case letter).
    var lenient: UnsafeRawBufferPointer?
    var method: HTTPMethod
    /// Methods named by `X-HTTP-Method-Override`, `X-HTTP-Method` and `X-Method-Override`.
    var overrides = HTTPMethodSet()
    /// The `Host` value (or the absolute-form target's authority), port and all.
    var host: UnsafeRawBufferPointer?
}

/// What the readings of a request ask of it, added up.
struct RuleVerdict {
    /// The first rule that refuses everyone under some reading.
    var deny: Int?
    /// Some reading is not public.
    var needsSession = false
    /// Some reading's rule is `api: true`.
    var isAPI = false
    /// The rule of the normalized path under the request's own method: it chooses the upstream.
    var rule: Int?
    /// Rules whose `allowed_*` the signed-in user must satisfy.
    var restricting = RuleIndexes()
    /// The `set_headers` every reading's rule adds (`RuleHeaders`; 0: none).
    private(set) var headers: RuleHeaders.Group = 0
    /// Some readings' rules add different fields (a rule with `set_headers` decides one
    /// reading, another rule or none decides another): there is no knowing which the upstream
    /// will act on, so the request is refused. The rule with fields of its own involved.
    private(set) var ambiguousHeaders: Int?
    private var headersNoted = false

    /// Adds one reading's fields: the first reading's stand unless a later one differs.
    @inline(__always) mutating func noteHeaders(_ group: RuleHeaders.Group, rule: Int?) {
        guard headersNoted else {
            headersNoted = true
            headers = group
            headersRule = rule
            return
        }
        if group != headers, ambiguousHeaders == nil {
            ambiguousHeaders = (group != 0 ? rule : nil) ?? headersRule ?? 0
        }
    }

    private var headersRule: Int?
}

/// A few rule indexes, inline (no allocation per request). Two path readings under a
/// handful of methods fit; more distinct restricting rules than that mark it `overflowed`,
/// which refuses the request (no legitimate client names many override methods).
struct RuleIndexes {
    private var slots: (Int32, Int32, Int32, Int32, Int32, Int32, Int32, Int32) = (0, 0, 0, 0, 0, 0, 0, 0)
    private(set) var count = 0
    private(set) var overflowed = false
    static let capacity = 8

    subscript(_ k: Int) -> Int {
        withUnsafeBytes(of: slots) { Int($0.load(fromByteOffset: k * 4, as: Int32.self)) }
    }

    var first: Int { count > 0 ? self[0] : 0 }

    mutating func insert(_ rule: Int) {
        for k in 0..<count where self[k] == rule { return }
        guard count < Self.capacity else {
            overflowed = true
            return
        }
        withUnsafeMutableBytes(of: &slots) { $0.storeBytes(of: Int32(rule), toByteOffset: count * 4, as: Int32.self) }
        count += 1
    }
}
